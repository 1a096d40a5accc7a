//! NIC command engines (docs/rdma.md, the Portals/SimGrid paper's TX and RX
//! actors): each HCA has `nic_tx_engines` transmit and `nic_rx_engines`
//! receive command processors. Every message the HCA sends (a host's send,
//! put or read request, or an ack or read response the HCA generates) is one
//! command on a TX engine before its payload is read from host memory;
//! every message it receives is one command on an RX engine, started when
//! its first packet is consumed, before its payload is written to host
//! memory. A command takes `nic_cmd_ns` on the engine that is free first
//! (the lowest-numbered among equals); commands wait FIFO for an engine.
//! Only with `host_model = true`.

/// Run a command arriving at `t` on the engine free first; returns the
/// time the command is done (None: beyond u64 ps, nothing changed).
pub(super) fn run_command(engines: &mut [u64], t: u64, cmd: u64) -> Option<u64> {
    let (i, &free) = engines
        .iter()
        .enumerate()
        .min_by_key(|&(i, &f)| (f, i))
        .expect("at least one engine");
    let end = t.max(free).checked_add(cmd)?;
    engines[i] = end;
    Some(end)
}

#[cfg(test)]
mod tests {
    use super::run_command;

    #[test]
    fn engines_run_commands_in_parallel() {
        // 2 engines, 3 commands of 100 at t = 0: two at once, then one
        let mut e = vec![0, 0];
        assert_eq!(run_command(&mut e, 0, 100), Some(100));
        assert_eq!(run_command(&mut e, 0, 100), Some(100));
        assert_eq!(run_command(&mut e, 0, 100), Some(200));
        // an idle engine starts at arrival
        assert_eq!(run_command(&mut e, 500, 100), Some(600));
        // overflow is an error, never saturation
        assert_eq!(run_command(&mut e, u64::MAX - 5, 100), None);
    }
}
