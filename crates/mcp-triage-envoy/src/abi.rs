//! Our own declarations of the part of Envoy 1.40's dynamic-module ABI this filter uses, written
//! from `source/extensions/dynamic_modules/abi/abi.h` of envoyproxy/envoy (the ABI is C: plain
//! pointers, `size_t`, `bool`, C enums as 32-bit integers). Envoy's Rust SDK is not on crates.io
//! and would pull in bindgen; a dozen callbacks do not need it.
//!
//! The callbacks are looked up in the host process when the module loads (`on_program_init`, see
//! [`load`]): an Envoy without one of them refuses the module with a clear message instead of
//! failing at the first call of a missing symbol.

use std::os::raw::c_char;

/// `envoy_dynamic_module_type_envoy_buffer`: bytes owned by Envoy.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct EnvoyBuffer {
    pub ptr: *const c_char,
    pub length: usize,
}

impl EnvoyBuffer {
    pub const EMPTY: EnvoyBuffer = EnvoyBuffer {
        ptr: std::ptr::null(),
        length: 0,
    };

    /// The bytes, valid until the end of the current event hook (Envoy's promise).
    ///
    /// # Safety
    /// `ptr` points to `length` readable bytes (or is NULL with any length, read as empty).
    pub unsafe fn bytes<'a>(&self) -> &'a [u8] {
        if self.ptr.is_null() || self.length == 0 {
            &[]
        } else {
            std::slice::from_raw_parts(self.ptr as *const u8, self.length)
        }
    }
}

/// `envoy_dynamic_module_type_module_buffer`: bytes owned by the module, read during the call.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ModuleBuffer {
    pub ptr: *const c_char,
    pub length: usize,
}

impl ModuleBuffer {
    pub fn of(b: &[u8]) -> ModuleBuffer {
        ModuleBuffer {
            ptr: b.as_ptr() as *const c_char,
            length: b.len(),
        }
    }
}

/// `envoy_dynamic_module_type_envoy_http_header`: one header line owned by Envoy.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct EnvoyHttpHeader {
    pub key: EnvoyBuffer,
    pub value: EnvoyBuffer,
}

impl EnvoyHttpHeader {
    pub const EMPTY: EnvoyHttpHeader = EnvoyHttpHeader {
        key: EnvoyBuffer::EMPTY,
        value: EnvoyBuffer::EMPTY,
    };
}

/// `envoy_dynamic_module_type_module_key_value_pair`: a metadata entry owned by the module.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct KeyValue {
    pub key: ModuleBuffer,
    pub value: ModuleBuffer,
}

pub type FilterConfigEnvoyPtr = *mut std::ffi::c_void;
pub type FilterConfigModulePtr = *const std::ffi::c_void;
pub type FilterEnvoyPtr = *mut std::ffi::c_void;
pub type FilterModulePtr = *const std::ffi::c_void;

/// `envoy_dynamic_module_type_http_header_type`.
pub const HEADER_REQUEST: u32 = 0;
pub const HEADER_RESPONSE: u32 = 2;
/// `envoy_dynamic_module_type_http_body_type`.
pub const BODY_RECEIVED_REQUEST: u32 = 0;
pub const BODY_RECEIVED_RESPONSE: u32 = 2;
/// `envoy_dynamic_module_type_metrics_result_Success`.
pub const METRICS_SUCCESS: u32 = 0;
/// `envoy_dynamic_module_type_attribute_id`: `response.code_details` and `response.flags`.
pub const ATTRIBUTE_RESPONSE_CODE_DETAILS: u32 = 16;
pub const ATTRIBUTE_RESPONSE_FLAGS: u32 = 17;
/// `envoy_dynamic_module_type_log_level`.
pub const LOG_INFO: u32 = 2;
pub const LOG_WARN: u32 = 3;
pub const LOG_ERROR: u32 = 4;
/// `envoy_dynamic_module_type_on_http_filter_local_reply_status`.
pub const LOCAL_REPLY_CONTINUE: u32 = 0;
pub const LOCAL_REPLY_CONTINUE_AND_RESET: u32 = 1;

/// `envoy_dynamic_module_callback_log`.
pub type LogFn = unsafe extern "C" fn(level: u32, message: ModuleBuffer);
/// `envoy_dynamic_module_callback_http_get_headers_size`.
pub type HeadersSizeFn = unsafe extern "C" fn(filter: FilterEnvoyPtr, header_type: u32) -> usize;
/// `envoy_dynamic_module_callback_http_get_headers`.
pub type HeadersFn = unsafe extern "C" fn(
    filter: FilterEnvoyPtr,
    header_type: u32,
    result: *mut EnvoyHttpHeader,
) -> bool;
/// `envoy_dynamic_module_callback_http_set_dynamic_metadata_string_batch`.
pub type SetStringBatchFn = unsafe extern "C" fn(
    filter: FilterEnvoyPtr,
    ns: ModuleBuffer,
    entries: *const KeyValue,
    entries_size: usize,
);
/// `envoy_dynamic_module_callback_http_get_body_chunks_size`.
pub type BodyChunksSizeFn = unsafe extern "C" fn(filter: FilterEnvoyPtr, body_type: u32) -> usize;
/// `envoy_dynamic_module_callback_http_get_body_chunks`.
pub type BodyChunksFn =
    unsafe extern "C" fn(filter: FilterEnvoyPtr, body_type: u32, result: *mut EnvoyBuffer) -> bool;
/// `envoy_dynamic_module_callback_http_set_dynamic_metadata_number`.
pub type SetNumberFn =
    unsafe extern "C" fn(filter: FilterEnvoyPtr, ns: ModuleBuffer, key: ModuleBuffer, value: f64);
/// `envoy_dynamic_module_callback_http_filter_get_attribute_string`.
pub type AttributeFn = unsafe extern "C" fn(
    filter: FilterEnvoyPtr,
    attribute_id: u32,
    result: *mut EnvoyBuffer,
) -> bool;
/// `envoy_dynamic_module_callback_http_filter_config_define_counter` and `_define_histogram`.
pub type DefineFn = unsafe extern "C" fn(
    config: FilterConfigEnvoyPtr,
    name: ModuleBuffer,
    label_names: *const ModuleBuffer,
    label_names_length: usize,
    id: *mut usize,
) -> u32;
/// `envoy_dynamic_module_callback_http_filter_increment_counter` and
/// `_record_histogram_value`.
pub type RecordFn = unsafe extern "C" fn(
    filter: FilterEnvoyPtr,
    id: usize,
    label_values: *const ModuleBuffer,
    label_values_length: usize,
    value: u64,
) -> u32;

/// The callbacks this filter calls, resolved in the host process once, when the module loads
/// (`on_program_init`), rather than linked: an Envoy without one of them refuses the module with
/// a message naming it, instead of failing at the first call; and the crate's tests link
/// without an Envoy.
pub struct Api {
    pub log: LogFn,
    pub get_headers_size: HeadersSizeFn,
    pub get_headers: HeadersFn,
    pub set_metadata_string_batch: SetStringBatchFn,
    pub get_body_chunks_size: BodyChunksSizeFn,
    pub get_body_chunks: BodyChunksFn,
    pub set_metadata_number: SetNumberFn,
    pub get_attribute_string: AttributeFn,
    pub define_counter: DefineFn,
    pub define_histogram: DefineFn,
    pub increment_counter: RecordFn,
    pub record_histogram: RecordFn,
}

static API: std::sync::OnceLock<Api> = std::sync::OnceLock::new();

/// The host's address of `name` (NUL-terminated), or the name when it is missing.
fn symbol(name: &'static str) -> Result<*mut std::ffi::c_void, &'static str> {
    // SAFETY: `name` is NUL-terminated; RTLD_DEFAULT searches the process's global scope, where
    // Envoy's executable exports its callbacks.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr() as *const c_char) };
    if p.is_null() {
        Err(name.trim_end_matches('\0'))
    } else {
        Ok(p)
    }
}

macro_rules! resolve {
    ($name:literal, $t:ty) => {
        // SAFETY: the symbol is Envoy's callback of that name, whose C signature is `$t`
        // (declared above from Envoy 1.40's abi.h).
        unsafe { std::mem::transmute::<*mut std::ffi::c_void, $t>(symbol(concat!($name, "\0"))?) }
    };
}

/// Resolves every callback; the name of the first one the host does not export on failure.
pub fn load() -> Result<(), &'static str> {
    if API.get().is_some() {
        return Ok(());
    }
    let api = Api {
        log: resolve!("envoy_dynamic_module_callback_log", LogFn),
        get_headers_size: resolve!(
            "envoy_dynamic_module_callback_http_get_headers_size",
            HeadersSizeFn
        ),
        get_headers: resolve!("envoy_dynamic_module_callback_http_get_headers", HeadersFn),
        set_metadata_string_batch: resolve!(
            "envoy_dynamic_module_callback_http_set_dynamic_metadata_string_batch",
            SetStringBatchFn
        ),
        get_body_chunks_size: resolve!(
            "envoy_dynamic_module_callback_http_get_body_chunks_size",
            BodyChunksSizeFn
        ),
        get_body_chunks: resolve!(
            "envoy_dynamic_module_callback_http_get_body_chunks",
            BodyChunksFn
        ),
        set_metadata_number: resolve!(
            "envoy_dynamic_module_callback_http_set_dynamic_metadata_number",
            SetNumberFn
        ),
        get_attribute_string: resolve!(
            "envoy_dynamic_module_callback_http_filter_get_attribute_string",
            AttributeFn
        ),
        define_counter: resolve!(
            "envoy_dynamic_module_callback_http_filter_config_define_counter",
            DefineFn
        ),
        define_histogram: resolve!(
            "envoy_dynamic_module_callback_http_filter_config_define_histogram",
            DefineFn
        ),
        increment_counter: resolve!(
            "envoy_dynamic_module_callback_http_filter_increment_counter",
            RecordFn
        ),
        record_histogram: resolve!(
            "envoy_dynamic_module_callback_http_filter_record_histogram_value",
            RecordFn
        ),
    };
    let _ = API.set(api);
    Ok(())
}

/// The callbacks; `None` before [`load`] succeeded (then the filter does nothing).
pub fn api() -> Option<&'static Api> {
    API.get()
}

/// The ABI version string this module was written against (`ENVOY_DYNAMIC_MODULES_ABI_VERSION`
/// of Envoy 1.40); Envoy compares it with its own at load and logs "matched" or a warning.
pub const ABI_VERSION: &str = "v0.2.0\0";

/// Logs under Envoy's `dynamic_modules` logger (nothing before [`load`]).
pub fn log(level: u32, message: &str) {
    if let Some(api) = api() {
        // SAFETY: the buffer is read during the call only.
        unsafe { (api.log)(level, ModuleBuffer::of(message.as_bytes())) }
    }
}
