//! The built-in LogGP network: every message is there when asked; the
//! timing is entirely the engine's (L, o, g, G, O rules).
use super::{Handle, NetError, Network};
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
    fn insert(
        &mut self,
        _now: Time,
        _src: u32,
        _dst: u32,
        _size: u64,
        _tag: u32,
    ) -> Result<Handle, NetError> {
        self.messages += 1;
        Ok(self.messages - 1)
    }
    #[inline]
    fn query(
        &mut self,
        _start: Time,
        now: Time,
        _src: u32,
        _dst: u32,
        _size: u64,
        _handle: Handle,
    ) -> Result<Time, NetError> {
        Ok(now)
    }
    fn stats(&self) -> Vec<(String, u64)> {
        vec![("messages".into(), self.messages)]
    }
}
