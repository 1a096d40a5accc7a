//! The built-in LogGP network: every message is there when asked; the
//! timing is entirely the engine's (L, o, g, G, O rules).
use super::{Envelope, Handle, InFlight, NetError, Network};
use crate::Time;

#[derive(Clone, Debug, Default)]
pub struct LogGp {
    messages: u64,
}

impl LogGp {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Network for LogGp {
    fn name(&self) -> &str {
        "LogGP"
    }
    #[inline]
    fn insert(&mut self, _now: Time, _env: Envelope) -> Result<Handle, NetError> {
        self.messages += 1;
        Ok(self.messages - 1)
    }
    #[inline]
    fn query(&mut self, now: Time, _m: InFlight) -> Result<Time, NetError> {
        Ok(now)
    }
    fn stats(&self) -> Vec<(String, u64)> {
        vec![("messages".into(), self.messages)]
    }
}
