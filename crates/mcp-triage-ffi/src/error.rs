//! Return codes, the thread-local last error, and the guard every extern function runs inside so
//! that no panic unwinds into C.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Success.
pub const MCPT_OK: i32 = 0;
/// A required pointer was NULL.
pub const MCPT_ERR_NULL_ARGUMENT: i32 = -1;
/// An argument has a bad value: a status outside 100..999, invalid UTF-8 in a header, an unknown
/// protocol version, bad limits JSON, a schema that does not compile, a handle that is not live.
pub const MCPT_ERR_INVALID_ARGUMENT: i32 = -2;
/// The classifier already returned its verdict (`mcpt_classifier_finish` or
/// `mcpt_classifier_interrupted` was called).
pub const MCPT_ERR_FINISHED: i32 = -3;
/// A panic was caught inside the library; nothing crossed the boundary and no output was written.
pub const MCPT_ERR_INTERNAL: i32 = -4;

/// An error on its way to C: the code returned and the message kept for `mcpt_last_error`.
#[derive(Debug)]
pub(crate) struct FfiError {
    pub(crate) code: i32,
    pub(crate) message: String,
}

impl FfiError {
    pub(crate) fn null(what: &str) -> FfiError {
        FfiError {
            code: MCPT_ERR_NULL_ARGUMENT,
            message: format!("{what} must not be NULL"),
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> FfiError {
        FfiError {
            code: MCPT_ERR_INVALID_ARGUMENT,
            message: message.into(),
        }
    }

    pub(crate) fn finished() -> FfiError {
        FfiError {
            code: MCPT_ERR_FINISHED,
            message: "this classifier already returned its verdict (mcpt_classifier_finish or \
                      mcpt_classifier_interrupted was called); free it with mcpt_classifier_free"
                .to_string(),
        }
    }
}

pub(crate) type FfiResult<T> = Result<T, FfiError>;

thread_local! {
    /// The message of the last error on this thread. Only a failing call replaces it, so the
    /// pointer `mcpt_last_error` returns stays valid until the next failing call on this thread
    /// (the contract promises less: until the next `mcpt_` call).
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: &str) {
    // A message never holds NUL (they are made here), but a caller's text quoted in one might.
    let c = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    // `try_with`: during thread teardown the slot may be gone; the code still tells the caller.
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = c);
}

/// The pointer to this thread's last error message ("" when none yet).
pub(crate) fn last_error_ptr() -> *const c_char {
    LAST_ERROR
        .try_with(|slot| slot.borrow().as_ptr())
        .unwrap_or(c"".as_ptr())
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

/// Runs `f` for the extern function `what`: its error becomes a code and the last error, a panic
/// becomes `MCPT_ERR_INTERNAL` with the panic's message.
pub(crate) fn guard(what: &str, f: impl FnOnce() -> FfiResult<()>) -> i32 {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => MCPT_OK,
        Ok(Err(e)) => {
            set_last_error(&format!("{what}: {}", e.message));
            e.code
        }
        Err(payload) => {
            set_last_error(&format!(
                "{what}: internal error, a panic was caught: {}",
                panic_text(&*payload)
            ));
            MCPT_ERR_INTERNAL
        }
    }
}

/// Runs an infallible accessor: a panic gives `fallback` (and the last error) instead of
/// unwinding into C.
pub(crate) fn guard_value<T>(what: &str, fallback: T, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(payload) => {
            set_last_error(&format!(
                "{what}: internal error, a panic was caught: {}",
                panic_text(&*payload)
            ));
            fallback
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn last() -> String {
        unsafe { CStr::from_ptr(last_error_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_panic_becomes_internal_with_its_message() {
        let code = guard("mcpt_test", || panic!("boom {}", 7));
        assert_eq!(code, MCPT_ERR_INTERNAL);
        assert_eq!(
            last(),
            "mcpt_test: internal error, a panic was caught: boom 7"
        );
        assert_eq!(guard_value("mcpt_test", -1, || panic!("static")), -1);
        assert!(last().ends_with("static"), "{}", last());
    }

    #[test]
    fn an_error_keeps_its_code_and_success_keeps_the_last_message() {
        assert_eq!(
            guard("mcpt_x", || Err(FfiError::invalid("bad \0 thing"))),
            MCPT_ERR_INVALID_ARGUMENT
        );
        assert_eq!(last(), "mcpt_x: bad \\0 thing");
        assert_eq!(guard("mcpt_y", || Ok(())), MCPT_OK);
        assert_eq!(last(), "mcpt_x: bad \\0 thing");
    }
}
