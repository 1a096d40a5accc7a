//! The command-line options of the fast backends (flow, penalty, lop),
//! shared by `loggopsim` and the library entry point `network::fast`.

/// Command-line options of the fast backends (flow, penalty, lop).
#[derive(clap::Args, Clone, Debug)]
pub struct FastArgs {
    /// flow, penalty: latency correction factor (SimGrid's
    /// network/latency-factor): every route latency is multiplied by it.
    #[arg(
        long,
        value_name = "F",
        default_value_t = 1.0,
        help_heading = "Fast backends (--network flow|penalty|lop)"
    )]
    pub latency_factor: f64,
    /// flow, penalty: bandwidth correction factor (SimGrid's
    /// network/bandwidth-factor): every link capacity is multiplied by it.
    #[arg(
        long,
        value_name = "F",
        default_value_t = 1.0,
        help_heading = "Fast backends (--network flow|penalty|lop)"
    )]
    pub bandwidth_factor: f64,
    /// lop: built-in parameter set of L(p) and o(p) (infinihost-send: the
    /// LoP paper's fitted Send/Receive functions for MTPB 23108 HCAs).
    #[arg(
        long,
        value_name = "NAME",
        default_value = "infinihost-send",
        help_heading = "Fast backends (--network flow|penalty|lop)"
    )]
    pub lop_set: String,
    /// lop: L(p) = l1 + l2/(l3 + p) + l4 (1 - exp(l5 (p - l6))), six
    /// numbers in microseconds (comma-separated), replacing the set's.
    #[arg(
        long = "lop-L",
        value_name = "L1,..,L6",
        help_heading = "Fast backends (--network flow|penalty|lop)"
    )]
    pub lop_l: Option<String>,
    /// lop: o(p) = o1 + o2/(o3 + p), three numbers in microseconds,
    /// replacing the set's.
    #[arg(
        long = "lop-o",
        value_name = "O1,O2,O3",
        help_heading = "Fast backends (--network flow|penalty|lop)"
    )]
    pub lop_o: Option<String>,
    /// lop: time per byte added to large messages beyond the first byte
    /// (LoP models 1-byte messages; ps per byte or with a unit, e.g. 0.5ns).
    #[arg(
        long = "lop-G",
        value_name = "TIME",
        default_value = "0",
        help_heading = "Fast backends (--network flow|penalty|lop)"
    )]
    pub lop_g: String,
    /// penalty: reading of the paper's rule (b). table (default): rule (b)
    /// only when every competing sender is back-pressured by full-bandwidth
    /// senders alone, otherwise rule (c); reproduces every printed penalty
    /// of Fig. 2 and Fig. 3. printed: the rules as printed (Fig. 2 exact;
    /// Fig. 3's f gets 10/7 instead of the table's 1.5) (docs/backends.md).
    #[arg(
        long = "penalty-rule-b",
        value_name = "READING",
        value_enum,
        default_value_t = PenaltyRuleB::Table,
        help_heading = "Fast backends (--network flow|penalty|lop)"
    )]
    pub penalty_rule_b: PenaltyRuleB,
}

/// Reading of the Martinasso-Mehaut rule (b) (see [`super::penalty`]).
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PenaltyRuleB {
    /// The rules as printed: (b) whenever outdeg(s) = 1.
    Printed,
    /// (b) only when every competing sender's destinations are contended
    /// by out-degree-1 senders alone ("pure back pressure"); else (c).
    /// The default: the one reading that gives every number the paper
    /// prints (Fig. 2 and all steps of Fig. 3).
    #[default]
    Table,
}

impl Default for FastArgs {
    fn default() -> Self {
        FastArgs {
            latency_factor: 1.0,
            bandwidth_factor: 1.0,
            lop_set: "infinihost-send".into(),
            lop_l: None,
            lop_o: None,
            lop_g: "0".into(),
            penalty_rule_b: PenaltyRuleB::Table,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{FastArgs, PenaltyRuleB};
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        fast: FastArgs,
    }

    /// The defaults of `Default` are those of the command line (no
    /// correction, the paper's LoP set, the table reading of rule (b)).
    #[test]
    fn defaults_match_the_command_line() {
        let cli = Cli::parse_from(["t"]);
        let d = FastArgs::default();
        assert_eq!(cli.fast.latency_factor, d.latency_factor);
        assert_eq!(cli.fast.bandwidth_factor, d.bandwidth_factor);
        assert_eq!(cli.fast.lop_set, d.lop_set);
        assert_eq!(cli.fast.lop_g, d.lop_g);
        assert_eq!(cli.fast.penalty_rule_b, PenaltyRuleB::Table);
        let cli = Cli::parse_from([
            "t",
            "--penalty-rule-b",
            "printed",
            "--bandwidth-factor",
            "0.5",
        ]);
        assert_eq!(cli.fast.penalty_rule_b, PenaltyRuleB::Printed);
        assert_eq!(cli.fast.bandwidth_factor, 0.5);
    }
}
