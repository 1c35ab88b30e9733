//! phi-core-driver: the conformance suite's driver (phi/conformance/suite/DRIVERS.md) for phi-core
//! 0.9.0, the Rust system the seed documents describe. See README.md in this directory.
//!
//! Protocol 1: one fixture on stdin, its lines on stdout. Protocol 2 (PHI_CONFORMANCE_PROTOCOL=2, or
//! --persistent): a hello line, then one fixture per stdin line, each closed by a done line.
//!
//! Each fixture runs on a current-thread tokio runtime of its own, created for it and dropped after
//! it: phi-core's loop, its tools, the driver's event consumer and whatever a fixture leaves behind
//! (a tool ignoring the abort) all live there, so one fixture's leftovers end with it, and the order
//! in which the runtime runs them is the same on every run.

mod clock;
mod hooks;
mod matching;
mod out;
mod provider;
mod run;
mod shared;
mod spec;
mod tools;

use out::{write_line, Gate};
use serde_json::{json, Value};
use std::io::{BufRead, Read};
use std::sync::Arc;

const DRIVER: &str = "phi-core 0.9.0 (Rust; conformance/drivers/phi-core)";

/// Run one fixture's text; returns its id (for the done line).
fn run_one(text: &str, gate: Arc<Gate>) -> Option<String> {
    let fixture: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            gate.write(&json!({"kind": "error", "error": "FixtureError", "message": format!("not JSON: {e}")}));
            return None;
        }
    };
    let id = fixture.get("id").and_then(Value::as_str).map(str::to_string);
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            gate.write(&json!({"kind": "error", "error": "DriverError", "message": format!("no runtime: {e}")}));
            return id;
        }
    };
    runtime.block_on(run::run_fixture(fixture, gate));
    runtime.shutdown_background();
    id
}

/// Panics are how application code in a fixture raises (and how phi-core refuses a continuation):
/// the driver reports them as error lines, so the default hook's backtrace note is left out.
fn quiet_panics() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let text = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(a scripted raise)".into());
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        eprintln!("phi-core driver: panic{at}: {text}");
    }));
}

fn main() {
    quiet_panics();
    let args: Vec<String> = std::env::args().collect();
    let offered = std::env::var("PHI_CONFORMANCE_PROTOCOL").ok().and_then(|v| v.parse::<u32>().ok()).unwrap_or(0);
    let persistent = !args.iter().any(|a| a == "--once") && (args.iter().any(|a| a == "--persistent") || offered >= 2);
    if persistent {
        write_line(&json!({"kind": "hello", "protocol": 2, "persistent": true, "driver": DRIVER}));
        let stdin = std::io::stdin();
        let mut input = stdin.lock();
        let mut bytes = Vec::new();
        loop {
            bytes.clear();
            match input.read_until(b'\n', &mut bytes) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    write_line(&json!({"kind": "error", "error": "DriverError", "message": format!("stdin: {e}")}));
                    std::process::exit(2);
                }
            }
            let gate = Arc::new(Gate::default());
            // a line that is not UTF-8 is a bad fixture like any other: answered, and the next one runs
            let id = match std::str::from_utf8(&bytes) {
                Ok(line) if line.trim().is_empty() => continue,
                Ok(line) => run_one(line, gate.clone()),
                Err(e) => {
                    gate.write(&json!({"kind": "error", "error": "FixtureError", "message": format!("not UTF-8: {e}")}));
                    None
                }
            };
            gate.shut();
            write_line(&json!({"kind": "done", "id": id}));
        }
    } else {
        let mut text = String::new();
        if let Err(e) = std::io::stdin().read_to_string(&mut text) {
            write_line(&json!({"kind": "error", "error": "FixtureError", "message": format!("stdin: {e}")}));
            std::process::exit(2);
        }
        let gate = Arc::new(Gate::default());
        run_one(&text, gate.clone());
        gate.shut();
    }
    std::process::exit(0);
}
