//! The event hooks Envoy calls (`envoy_dynamic_module_on_*`), exported with the C names and
//! signatures of Envoy 1.40's `abi.h`. Each one catches a panic so that nothing unwinds into
//! Envoy; the filter then stops classifying that stream, and traffic is never changed.
//!
//! # Safety
//! Only Envoy calls these, with the pointers its ABI describes: the module pointers are the ones
//! these hooks returned (a `Shared` from `config_new`, a `Filter` from `filter_new`), live until
//! their `destroy` hook, and the buffers are Envoy's, valid during the call.
#![allow(clippy::missing_safety_doc)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::abi::{
    self, EnvoyBuffer, FilterConfigEnvoyPtr, FilterConfigModulePtr, FilterEnvoyPtr,
    FilterModulePtr, ModuleBuffer,
};
use crate::config::{MetricIds, Options, Shared};
use crate::ends;
use crate::filter::Filter;

type Void = std::ffi::c_void;

/// Loads: resolves the callbacks (the ABI check) and returns the ABI version Envoy compares
/// with its own; NULL (Envoy refuses the module) when a callback is missing.
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_program_init() -> *const std::os::raw::c_char {
    match abi::load() {
        Ok(()) => abi::ABI_VERSION.as_ptr() as *const _,
        Err(missing) => {
            eprintln!("mcp_triage: this Envoy does not export {missing} (the module is written for Envoy 1.40's dynamic-module ABI {})", abi::ABI_VERSION.trim_end_matches('\0'));
            std::ptr::null()
        }
    }
}

/// A filter configuration: the options, and the metrics defined in Envoy's stats.
#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_config_new(
    config_envoy: FilterConfigEnvoyPtr,
    _name: EnvoyBuffer,
    config: EnvoyBuffer,
) -> FilterConfigModulePtr {
    let made = catch_unwind(AssertUnwindSafe(|| {
        let options = match Options::parse(config.bytes()) {
            Ok(o) => o,
            Err(e) => {
                abi::log(abi::LOG_ERROR, &format!("mcp_triage: {e}"));
                return std::ptr::null();
            }
        };
        let metrics = define_metrics(config_envoy);
        if metrics.is_none() {
            abi::log(
                abi::LOG_WARN,
                "mcp_triage: could not define the metrics; exchanges are logged but not counted",
            );
        }
        Arc::into_raw(Arc::new(Shared::new(options, metrics))) as FilterConfigModulePtr
    }));
    made.unwrap_or(std::ptr::null())
}

fn define_metrics(config_envoy: FilterConfigEnvoyPtr) -> Option<MetricIds> {
    let api = abi::api()?;
    let labels = [b"server" as &[u8], b"tool", b"layer", b"outcome"].map(ModuleBuffer::of);
    let (mut calls, mut duration) = (0usize, 0usize);
    // SAFETY: names and labels are read during the calls; the ids are writable
    let ok = unsafe {
        (api.define_counter)(
            config_envoy,
            ModuleBuffer::of(b"mcp_triage_calls_total"),
            labels.as_ptr(),
            4,
            &mut calls,
        ) == abi::METRICS_SUCCESS
            && (api.define_histogram)(
                config_envoy,
                ModuleBuffer::of(b"mcp_triage_call_duration_milliseconds"),
                labels.as_ptr(),
                2,
                &mut duration,
            ) == abi::METRICS_SUCCESS
    };
    ok.then_some(MetricIds { calls, duration })
}

#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_config_destroy(
    config: FilterConfigModulePtr,
) {
    if !config.is_null() {
        drop(Arc::from_raw(config as *const Shared));
    }
}

#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_new(
    config: FilterConfigModulePtr,
    _envoy: FilterEnvoyPtr,
) -> FilterModulePtr {
    if config.is_null() {
        return std::ptr::null();
    }
    let shared = config as *const Shared;
    Arc::increment_strong_count(shared);
    let filter = Box::new(Filter::new(Arc::from_raw(shared)));
    Box::into_raw(filter) as FilterModulePtr
}

/// Runs `f` on the stream's filter; a panic leaves the stream unclassified.
unsafe fn with_filter(ptr: FilterModulePtr, f: impl FnOnce(&mut Filter)) {
    if ptr.is_null() {
        return;
    }
    let filter = &mut *(ptr as *mut Filter);
    if catch_unwind(AssertUnwindSafe(|| f(filter))).is_err() {
        filter.idle = true;
        abi::log(
            abi::LOG_ERROR,
            "mcp_triage: a panic was caught; the stream goes on unclassified",
        );
    }
}

#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_request_headers(
    envoy: FilterEnvoyPtr,
    filter: FilterModulePtr,
    end_of_stream: bool,
) -> u32 {
    with_filter(filter, |f| f.request_headers(envoy, end_of_stream));
    0
}

#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_request_body(
    envoy: FilterEnvoyPtr,
    filter: FilterModulePtr,
    end_of_stream: bool,
) -> u32 {
    with_filter(filter, |f| f.request_body(envoy, end_of_stream));
    0
}

#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_request_trailers(
    _envoy: FilterEnvoyPtr,
    filter: FilterModulePtr,
) -> u32 {
    with_filter(filter, |f| f.request_end());
    0
}

#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_response_headers(
    envoy: FilterEnvoyPtr,
    filter: FilterModulePtr,
    end_of_stream: bool,
) -> u32 {
    with_filter(filter, |f| f.response_headers(envoy, end_of_stream));
    0
}

#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_response_body(
    envoy: FilterEnvoyPtr,
    filter: FilterModulePtr,
    end_of_stream: bool,
) -> u32 {
    with_filter(filter, |f| f.response_body(envoy, end_of_stream));
    0
}

#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_response_trailers(
    _envoy: FilterEnvoyPtr,
    filter: FilterModulePtr,
) -> u32 {
    with_filter(filter, |f| f.eof = !f.classifier.is_null());
    0
}

/// Envoy answers itself: when it is about the upstream (no response head), the verdict is the
/// proxy's for that case, and the client's stream is reset instead of a 503 when the upstream
/// closed after the request (`closeOnUpstreamLoss`).
#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_local_reply(
    _envoy: FilterEnvoyPtr,
    filter: FilterModulePtr,
    response_code: u32,
    details: EnvoyBuffer,
    _reset_imminent: bool,
) -> u32 {
    let mut reset = false;
    with_filter(filter, |f| {
        if f.idle || f.req.is_null() || !f.classifier.is_null() {
            return;
        }
        f.local_reply = true;
        if let Some(n) = ends::no_head(response_code, &String::from_utf8_lossy(details.bytes())) {
            reset = n.reset_client && f.shared.options.close_on_upstream_loss;
            f.no_head = Some(n);
        }
    });
    if reset {
        abi::LOCAL_REPLY_CONTINUE_AND_RESET
    } else {
        abi::LOCAL_REPLY_CONTINUE
    }
}

#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_stream_complete(
    envoy: FilterEnvoyPtr,
    filter: FilterModulePtr,
) {
    with_filter(filter, |f| f.complete(envoy));
}

#[no_mangle]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_destroy(filter: FilterModulePtr) {
    if !filter.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            drop(Box::from_raw(filter as *mut Filter))
        }));
    }
}

// ---- hooks of features this filter does not use (per-route config, callouts, schedulers,
// watermarks): exported because Envoy resolves them when it loads an HTTP filter module ----

#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_per_route_config_new(
    _name: EnvoyBuffer,
    _config: EnvoyBuffer,
) -> *const Void {
    std::ptr::null()
}
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_per_route_config_destroy(
    _config: *const Void,
) {
}
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_callout_done(
    _e: FilterEnvoyPtr,
    _f: FilterModulePtr,
    _id: u64,
    _result: u32,
    _h: *const Void,
    _hn: usize,
    _b: *const Void,
    _bn: usize,
) {
}
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_headers(
    _e: FilterEnvoyPtr,
    _f: FilterModulePtr,
    _id: u64,
    _h: *const Void,
    _hn: usize,
    _end: bool,
) {
}
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_data(
    _e: FilterEnvoyPtr,
    _f: FilterModulePtr,
    _id: u64,
    _d: *const Void,
    _dn: usize,
    _end: bool,
) {
}
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_trailers(
    _e: FilterEnvoyPtr,
    _f: FilterModulePtr,
    _id: u64,
    _t: *const Void,
    _tn: usize,
) {
}
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_complete(
    _e: FilterEnvoyPtr,
    _f: FilterModulePtr,
    _id: u64,
) {
}
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_reset(
    _e: FilterEnvoyPtr,
    _f: FilterModulePtr,
    _id: u64,
    _reason: u32,
) {
}
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_scheduled(
    _e: FilterEnvoyPtr,
    _f: FilterModulePtr,
    _id: u64,
) {
}
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_config_scheduled(
    _e: FilterConfigEnvoyPtr,
    _c: FilterConfigModulePtr,
    _id: u64,
) {
}
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_config_http_callout_done(
    _e: FilterConfigEnvoyPtr,
    _c: FilterConfigModulePtr,
    _id: u64,
    _result: u32,
    _h: *const Void,
    _hn: usize,
    _b: *const Void,
    _bn: usize,
) {
}
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_config_http_stream_headers(
    _e: FilterConfigEnvoyPtr,
    _c: FilterConfigModulePtr,
    _id: u64,
    _h: *const Void,
    _hn: usize,
    _end: bool,
) {
}
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_config_http_stream_data(
    _e: FilterConfigEnvoyPtr,
    _c: FilterConfigModulePtr,
    _id: u64,
    _d: *const Void,
    _dn: usize,
    _end: bool,
) {
}
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_config_http_stream_trailers(
    _e: FilterConfigEnvoyPtr,
    _c: FilterConfigModulePtr,
    _id: u64,
    _t: *const Void,
    _tn: usize,
) {
}
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_config_http_stream_complete(
    _e: FilterConfigEnvoyPtr,
    _c: FilterConfigModulePtr,
    _id: u64,
) {
}
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_config_http_stream_reset(
    _e: FilterConfigEnvoyPtr,
    _c: FilterConfigModulePtr,
    _id: u64,
    _reason: u32,
) {
}
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_downstream_above_write_buffer_high_watermark(
    _e: FilterEnvoyPtr,
    _f: FilterModulePtr,
) {
}
#[no_mangle]
pub extern "C" fn envoy_dynamic_module_on_http_filter_downstream_below_write_buffer_low_watermark(
    _e: FilterEnvoyPtr,
    _f: FilterModulePtr,
) {
}
