//! Timestamps for the messages the driver creates.
//!
//! phi-core builds a model request from its per-run message streams sorted by timestamp
//! (`AgentContext::build_working_context`), so the order a model sees depends on the milliseconds
//! messages were stamped with; two messages stamped in the same millisecond keep their stream's
//! order (user messages first). Messages created at different moments — a queued message, the reply
//! before it, the turns of a history — have different timestamps in any real use; here they would
//! often share one, and the request's order would depend on the machine's speed. So every message
//! the driver creates (prompts, queued messages, scripted replies, history messages a fixture gives
//! without a timestamp) gets a millisecond of its own: later than anything stamped before it, earlier
//! than anything stamped after it. Waiting for the clock to tick costs at most two milliseconds.

use phi_core::types::content::now_ms;
use std::time::Duration;

fn tick_after(t: u64) -> u64 {
    loop {
        let now = now_ms();
        if now > t {
            return now;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Let the clock tick: what is stamped after this is later than what was stamped before it. A
/// scripted tool call does this before it returns, so phi-core stamps each result with a millisecond
/// of its own and orders results that finished one after the other by when they finished (its
/// semantics), not by how fast the machine ran them.
pub fn tick() {
    tick_after(now_ms());
}

/// A timestamp no other message shares with it (see the module comment).
pub fn stamp() -> u64 {
    let mine = tick_after(now_ms());
    tick_after(mine);
    mine
}
