//! A value worked out once from a tool's input and reused by the later phases of the same call:
//! validation, the permission check and execution all need, say, the compiled regex, and
//! compiling it three times costs milliseconds.

use std::fmt;
use std::sync::{Arc, OnceLock};

/// Lives in a tool's input struct as `#[serde(skip)] #[schemars(skip)]`, so it is empty for
/// every new input (including one rewritten by a hook) and never part of the schema.
pub(crate) struct Memo<T>(OnceLock<Result<Arc<T>, String>>);

impl<T> Memo<T> {
    /// The value, computed by `make` the first time only (its error is remembered too).
    pub(crate) fn get_or_try(
        &self,
        make: impl FnOnce() -> Result<T, String>,
    ) -> Result<Arc<T>, String> {
        self.0.get_or_init(|| make().map(Arc::new)).clone()
    }
}

impl<T> Default for Memo<T> {
    fn default() -> Self {
        Memo(OnceLock::new())
    }
}

impl<T> Clone for Memo<T> {
    fn clone(&self) -> Self {
        Memo(self.0.clone())
    }
}

impl<T> fmt::Debug for Memo<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "Memo(set)"
        } else {
            "Memo(empty)"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn memoised_fields_stay_out_of_the_model_facing_schemas() {
        for tool in crate::tools::pool::builtin_tools() {
            let props = &tool.input_schema()["properties"];
            assert!(props.get("search").is_none(), "{}: {props}", tool.name());
        }
    }

    #[test]
    fn computes_once_and_remembers_errors() {
        let calls = Cell::new(0);
        let m: Memo<u32> = Memo::default();
        let make = || {
            calls.set(calls.get() + 1);
            Ok(7)
        };
        assert_eq!(*m.get_or_try(make).unwrap(), 7);
        assert_eq!(*m.get_or_try(|| Ok(8)).unwrap(), 7);
        assert_eq!(calls.get(), 1);
        let bad: Memo<u32> = Memo::default();
        assert_eq!(bad.get_or_try(|| Err("no".into())).unwrap_err(), "no");
        assert_eq!(bad.get_or_try(|| Ok(1)).unwrap_err(), "no");
    }
}
