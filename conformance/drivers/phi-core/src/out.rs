//! The driver's stdout: one JSON object per line, written whole.

use serde_json::Value;
use std::io::Write;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// A lock that outlives a panic: application code in a fixture panics on purpose (`raise`), and a
/// lock it held must not take the rest of the fixture (or the next one) with it.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

pub fn write_line(value: &Value) {
    let text = value.to_string();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

/// One fixture's share of stdout (DRIVERS.md §1.2): open while the fixture runs, shut at its `done`
/// line, after which whatever it left running (a tool that ignores the abort) writes nothing.
#[derive(Default)]
pub struct Gate {
    shut: Mutex<bool>,
}

impl Gate {
    pub fn write(&self, value: &Value) {
        let shut = lock(&self.shut);
        if !*shut {
            write_line(value);
        }
    }

    pub fn shut(&self) {
        *lock(&self.shut) = true;
    }
}
