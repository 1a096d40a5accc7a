//! The one list of network backends: each entry's name (the `--network`
//! value), its one-line description (the `--help` text), what it can and
//! needs (its capabilities) and how it is built.
//!
//! The command line reads it for `--network` and its help, the option
//! checks read the capabilities through [`check`] (instead of matching on
//! backend names in several places), the tests iterate [`all`], and the
//! Python package can list it. Adding a backend is one entry in
//! [`BACKENDS`] (docs/architecture.md, "A network backend").

use super::fabric::{CosimArgs, CosimNetwork};
use super::flow::FastArgs;
use super::{fast, LogGp, Network};
use ibnet::server::{FabricServer, SetupArgs};

/// What a backend can do and needs; the command line's checks read these
/// instead of backend names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Reads the fabric's topology (`--topology`): `--job` places ranks on
    /// its HCAs, and sends larger than the flit fabric's largest message
    /// ([`MAX_MESSAGE_BYTES`]) are refused up front.
    pub topology: bool,
    /// Reads the rank map (`--map`) in this process: `--job` hands it the
    /// placement as a temporary map file. (`ipc`'s fabric runs in another
    /// process, which gets the map from `scripts/cosim`.)
    pub map_in_process: bool,
    /// Builds the flit fabric in this process: a schedule with put/get
    /// raises a version-2 protocol to version 3 (docs/protocol.md).
    pub fabric_in_process: bool,
    /// The fabric can be built while the schedule is read (on another
    /// thread), and handed to the constructor ([`Setup::prebuilt`]).
    pub prebuild: bool,
    /// Attaches to a session of another process: needs `--key`.
    pub session_key: bool,
    /// `--slowdown` works: each job can be run alone on a fabric of its own.
    pub alone_runs: bool,
    /// Fast model reading the fabric's options: built by [`fast::build`]
    /// (the library entry of the backend study) and synchronised by
    /// `--protocol` notify (exact) or query (poll).
    pub fast: bool,
}

/// Largest message the flit-level fabric simulates (the same limit as
/// ibnet's `MAX_MESSAGE_BYTES`, 1 TiB): bigger sends are refused before the
/// fabric is started (inside it they would abort the run).
pub const MAX_MESSAGE_BYTES: u64 = 1 << 40;

/// A fabric server built beforehand (one-piece mode), or why it failed.
pub type Prebuilt = Result<FabricServer, String>;

/// What a constructor gets.
pub struct Setup<'a> {
    pub cosim: &'a CosimArgs,
    pub fast: &'a FastArgs,
    pub num_ranks: u32,
    /// loggopsim gives one to the backends with [`Capabilities::prebuild`];
    /// every backend with [`Capabilities::fabric_in_process`] takes one
    /// (the Python package hands over a server that observes the run).
    pub prebuilt: Option<Prebuilt>,
}

/// Why a backend could not be built, and the exit code of the command
/// line (1: the other side failed, 2: the user's options).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildError {
    pub code: i32,
    pub message: String,
}

fn user(message: String) -> BuildError {
    BuildError { code: 2, message }
}

/// A fast model's constructor: fabric options, fast options, exact
/// (notify) or poll (query) synchronisation, rank count.
pub type FastBuild = fn(&SetupArgs, &FastArgs, bool, u32) -> Result<Box<dyn Network>, String>;

/// One registered backend.
pub struct Backend {
    /// The `--network` value.
    pub name: &'static str,
    /// One line for `--help`.
    pub help: &'static str,
    pub caps: Capabilities,
    /// Builds it (`make`); gets its own entry, so that one function can
    /// serve several backends.
    pub build: fn(&Backend, Setup<'_>) -> Result<Box<dyn Network>, BuildError>,
    /// The fast models' own constructor (`caps.fast`), used by [`fast::build`].
    pub fast_build: Option<FastBuild>,
}

impl Backend {
    /// Builds this backend.
    pub fn make(&self, s: Setup<'_>) -> Result<Box<dyn Network>, BuildError> {
        (self.build)(self, s)
    }
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend")
            .field("name", &self.name)
            .field("caps", &self.caps)
            .finish()
    }
}

impl Capabilities {
    /// Each capability by its field name, in declaration order (for
    /// listings such as the Python package's `ibcosim.backends()`).
    pub fn flags(&self) -> [(&'static str, bool); 7] {
        [
            ("topology", self.topology),
            ("map_in_process", self.map_in_process),
            ("fabric_in_process", self.fabric_in_process),
            ("prebuild", self.prebuild),
            ("session_key", self.session_key),
            ("alone_runs", self.alone_runs),
            ("fast", self.fast),
        ]
    }
}

const NONE: Capabilities = Capabilities {
    topology: false,
    map_in_process: false,
    fabric_in_process: false,
    prebuild: false,
    session_key: false,
    alone_runs: true,
    fast: false,
};

/// The in-process flit fabric (inproc, onepiece).
const FABRIC_HERE: Capabilities = Capabilities {
    topology: true,
    map_in_process: true,
    fabric_in_process: true,
    ..NONE
};

/// A fast model on the fabric's options (flow, penalty, lop).
const FAST: Capabilities = Capabilities {
    topology: true,
    map_in_process: true,
    fast: true,
    ..NONE
};

/// Every backend, in `--help` order (the order of the former `NetworkKind`).
pub static BACKENDS: &[Backend] = &[
    Backend {
        name: "loggp",
        help: "Built-in LogGP model (the reference's)",
        caps: NONE,
        build: |_, _| Ok(Box::new(LogGp::new())),
        fast_build: None,
    },
    Backend {
        name: "ipc",
        help: "Flit-level IB fabric in another process (`ibnet serve --key KEY`), over the \
               transport the fabric chose (shared-memory rings or POSIX message queues)",
        caps: Capabilities {
            topology: true,
            session_key: true,
            alone_runs: false,
            ..NONE
        },
        // the fabric process failing is a simulation failure (exit 1)
        build: |_, s| {
            CosimNetwork::connect_ipc(s.cosim, s.num_ranks)
                .map(|n| Box::new(n) as Box<dyn Network>)
                .map_err(|message| BuildError { code: 1, message })
        },
        fast_build: None,
    },
    Backend {
        name: "inproc",
        help: "Flit-level IB fabric on a thread of this process (same protocol, in-process \
               channels)",
        caps: FABRIC_HERE,
        build: |_, s| {
            match s.prebuilt {
                Some(p) => p
                    .and_then(|server| super::inproc::check_ranks(s.cosim, server, s.num_ranks))
                    .and_then(|server| super::inproc::spawn_with(s.cosim, server)),
                None => super::inproc::spawn(s.cosim, s.num_ranks),
            }
            .map(|n| Box::new(n) as Box<dyn Network>)
            .map_err(user)
        },
        fast_build: None,
    },
    Backend {
        name: "onepiece",
        help: "Flit-level IB fabric called directly from the scheduler's thread (no second \
               thread, no channel)",
        caps: Capabilities {
            prebuild: true,
            ..FABRIC_HERE
        },
        build: |_, s| {
            match s.prebuilt {
                Some(p) => super::onepiece::build_from(s.cosim, s.num_ranks, p),
                None => super::onepiece::build(s.cosim, s.num_ranks),
            }
            .map(|n: CosimNetwork| Box::new(n) as Box<dyn Network>)
            .map_err(user)
        },
        fast_build: None,
    },
    Backend {
        name: "flow",
        help: "Flow-level max-min model (SimGrid CM02-like) on the fabric's topology, routes \
               and rank map (--topology/--preset/--set/--map): link rate after 8b/10b, ISW+VSW \
               per switch (docs/backends.md)",
        caps: FAST,
        build: build_fast,
        fast_build: Some(|f, a, exact, n| {
            Ok(Box::new(super::flow::build(f, a, exact, n)?) as Box<dyn Network>)
        }),
    },
    Backend {
        name: "penalty",
        help: "Martinasso-Mehaut penalty contention model on the hosts' NICs, max-min on \
               inter-switch links",
        caps: FAST,
        build: build_fast,
        fast_build: Some(|f, a, exact, n| {
            Ok(Box::new(super::penalty::build(f, a, exact, n)?) as Box<dyn Network>)
        }),
    },
    Backend {
        name: "lop",
        help: "LoP: per-peer L(p) and o(p) for small messages \
               (--lop-set/--lop-L/--lop-o/--lop-G)",
        caps: FAST,
        build: build_fast,
        fast_build: Some(|_, a, _, n| Ok(Box::new(super::lop::build(a, n)?) as Box<dyn Network>)),
    },
];

/// A fast model, through [`fast::build`] (its protocol check first).
fn build_fast(b: &Backend, s: Setup<'_>) -> Result<Box<dyn Network>, BuildError> {
    fast::build(
        b.name,
        &s.cosim.fabric,
        s.fast,
        s.cosim.protocol,
        s.num_ranks,
    )
    .map_err(user)
}

/// Every registered backend.
pub fn all() -> &'static [Backend] {
    BACKENDS
}

/// The backend called `name`.
pub fn find(name: &str) -> Option<&'static Backend> {
    BACKENDS.iter().find(|b| b.name == name)
}

/// The backend called `name`, or the command line's message naming the
/// registered ones.
pub fn lookup(name: &str) -> Result<&'static Backend, String> {
    find(name).ok_or_else(|| {
        let names: Vec<&str> = BACKENDS.iter().map(|b| b.name).collect();
        format!(
            "invalid value '{name}' for '--network <NETWORK>': expected one of {}",
            names.join(", ")
        )
    })
}

/// The names of the fast models (`caps.fast`).
pub fn fast_names() -> Vec<&'static str> {
    BACKENDS
        .iter()
        .filter(|b| b.caps.fast)
        .map(|b| b.name)
        .collect()
}

/// The options of a run that depend on the backend's capabilities.
#[derive(Clone, Copy, Debug, Default)]
pub struct Request<'a> {
    /// `--key`.
    pub key: Option<&'a str>,
    /// `--print-map` (the run stops after printing the map: no session).
    pub print_map: bool,
    /// `--slowdown`.
    pub slowdown: bool,
}

/// Checks a run's options against `b`'s capabilities; the error is the
/// command line's message (exit code 2: the user's options).
///
/// The session key is checked by the rule `ibnet serve` applies when it
/// creates the session ([`ipc_proto::SessionKey::new`]), before anything is
/// read or attached.
pub fn check(b: &Backend, r: &Request<'_>) -> Result<(), String> {
    if b.caps.session_key && !r.print_map {
        match r.key {
            None => {
                return Err(format!(
                    "--network {} needs --key KEY (the session key given to `ibnet serve --key`)",
                    b.name
                ))
            }
            Some(k) => {
                ipc_proto::SessionKey::new(k).map_err(|e| format!("--key: {e}"))?;
            }
        }
    }
    if r.slowdown && !b.caps.alone_runs {
        return Err(format!(
            "--slowdown needs a fabric per alone run; with --network {} there is one fabric \
             process: use --network onepiece or inproc (the same fabric on this process)",
            b.name
        ));
    }
    Ok(())
}

/// The `--network` value parser: the registered names, each with its help
/// line (clap lists them in `--help`).
pub fn value_parser() -> impl clap::builder::TypedValueParser<Value = &'static Backend> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(
        BACKENDS
            .iter()
            .map(|b| clap::builder::PossibleValue::new(b.name).help(b.help)),
    )
    .map(|name: String| find(&name).expect("a registered name"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        for (i, b) in all().iter().enumerate() {
            assert!(std::ptr::eq(find(b.name).unwrap(), b));
            assert!(all()[..i].iter().all(|o| o.name != b.name));
            assert!(!b.help.is_empty() && !b.help.ends_with('.'));
        }
        assert!(find("nope").is_none());
    }

    #[test]
    fn lookup_names_the_registered_backends() {
        assert_eq!(lookup("flow").unwrap().name, "flow");
        assert_eq!(
            lookup("nope").unwrap_err(),
            "invalid value 'nope' for '--network <NETWORK>': expected one of loggp, ipc, \
             inproc, onepiece, flow, penalty, lop"
        );
    }

    #[test]
    fn flags_follow_the_fields() {
        let f = find("onepiece").unwrap().caps.flags();
        let on: Vec<&str> = f.iter().filter(|(_, v)| *v).map(|(k, _)| *k).collect();
        assert_eq!(
            on,
            [
                "topology",
                "map_in_process",
                "fabric_in_process",
                "prebuild",
                "alone_runs"
            ]
        );
        assert_eq!(find("ipc").unwrap().caps.flags()[4], ("session_key", true));
    }

    #[test]
    fn fast_models_have_their_constructor() {
        for b in all() {
            assert_eq!(b.caps.fast, b.fast_build.is_some(), "{}", b.name);
        }
        assert_eq!(fast_names(), ["flow", "penalty", "lop"]);
    }

    #[test]
    fn only_loggp_has_no_topology() {
        for b in all() {
            assert_eq!(b.caps.topology, b.name != "loggp", "{}", b.name);
        }
    }

    #[test]
    fn checks_give_the_command_line_messages() {
        let ipc = find("ipc").unwrap();
        let r = Request::default();
        assert_eq!(
            check(ipc, &r).unwrap_err(),
            "--network ipc needs --key KEY (the session key given to `ibnet serve --key`)"
        );
        let pm = Request {
            print_map: true,
            ..r
        };
        assert!(check(ipc, &pm).is_ok());
        let bad = Request {
            key: Some("a/b"),
            ..r
        };
        assert!(check(ipc, &bad).unwrap_err().starts_with("--key: "));
        let slow = Request {
            key: Some("k"),
            slowdown: true,
            ..r
        };
        assert!(check(ipc, &slow)
            .unwrap_err()
            .starts_with("--slowdown needs a fabric per alone run; with --network ipc"));
        for b in all().iter().filter(|b| b.name != "ipc") {
            assert!(check(b, &slow).is_ok(), "{}", b.name);
        }
    }
}
