//! Errors of the topology loaders, generators, routing and validation.

use std::fmt;
use std::path::{Path, PathBuf};

/// A place in an input file, for error messages (`file:line:col`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loc {
    pub file: String,
    /// 1-based line, 0 when unknown.
    pub line: usize,
    /// 1-based column, 0 when unknown.
    pub col: usize,
}

impl Loc {
    pub fn file(path: &Path) -> Loc {
        Loc {
            file: path.display().to_string(),
            line: 0,
            col: 0,
        }
    }
    pub fn line(path: &Path, line: usize) -> Loc {
        Loc {
            file: path.display().to_string(),
            line,
            col: 0,
        }
    }
    /// Location of byte offset `offset` in `text` (1-based line and column).
    pub fn at_offset(path: &Path, text: &str, offset: usize) -> Loc {
        let offset = offset.min(text.len());
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let col = before.rfind('\n').map_or(offset, |nl| offset - nl - 1) + 1;
        Loc {
            file: path.display().to_string(),
            line,
            col,
        }
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
            if self.col > 0 {
                write!(f, ":{}", self.col)?;
            }
        }
        Ok(())
    }
}

/// Every error of `ibnet::topology`. Messages name the file, line and the
/// offending switch/HCA/LID wherever that is known.
#[derive(Debug, thiserror::Error)]
pub enum TopoError {
    #[error("{}: cannot read: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Syntax or semantic error at a place in an input file.
    #[error("{loc}: {msg}")]
    Parse { loc: Loc, msg: String },
    /// A structural problem of the network (ports, links, LIDs, ranks).
    #[error("invalid topology: {0}")]
    Invalid(String),
    /// A switch on the way from some HCA to `lid` has no usable route.
    #[error("switch {switch} has no route to LID {lid} (HCA {hca}){detail}")]
    Unroutable {
        switch: String,
        lid: u16,
        hca: String,
        /// extra context, e.g. " (table entry 7 points to an unconnected port)"
        detail: String,
    },
    /// Following the forwarding tables towards `lid` revisits a switch.
    #[error("forwarding loop towards LID {lid}: {}", cycle.join(" -> "))]
    Loop { lid: u16, cycle: Vec<String> },
    /// Routing algorithm not applicable to this network.
    #[error("routing: {0}")]
    Routing(String),
    #[error("unknown built-in topology {0:?} (known: H8_S1, H8_S2, H8_S4, H8_S6, M9, fattree:P, fattree:P:L, chain:N, kary:K:N, fattree2:HPL:LEAVES:SPINES, fattree3:HPL:LPP:APP:PODS, fattree:hosts=N, torus:AxB.., mesh:AxB.., dragonfly:A:P:H:G)")]
    UnknownBuiltin(String),
    /// An error about the network loaded from `file` (validation and routing
    /// errors are wrapped in this so the message names the input file).
    #[error("{file}: {source}")]
    InFile {
        file: String,
        #[source]
        source: Box<TopoError>,
    },
}

impl TopoError {
    pub(crate) fn parse(loc: Loc, msg: impl Into<String>) -> TopoError {
        TopoError::Parse {
            loc,
            msg: msg.into(),
        }
    }
    pub(crate) fn io(path: &Path, source: std::io::Error) -> TopoError {
        TopoError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
    /// Wrap a validation/routing error with the input file it came from.
    pub(crate) fn in_file(self, path: &Path) -> TopoError {
        match self {
            e @ (TopoError::Parse { .. } | TopoError::Io { .. } | TopoError::InFile { .. }) => e,
            e => TopoError::InFile {
                file: path.display().to_string(),
                source: Box::new(e),
            },
        }
    }
    /// The innermost error (unwraps `InFile`).
    pub fn inner(&self) -> &TopoError {
        match self {
            TopoError::InFile { source, .. } => source.inner(),
            e => e,
        }
    }
}

/// Read an input file: regular files only, bounded, UTF-8 errors with
/// their line (see [`crate::input`]).
pub(crate) fn read_text(path: &Path) -> Result<String, TopoError> {
    use crate::input::InputError;
    crate::input::read_text(path).map_err(|e| match e {
        InputError::Io(e) => TopoError::io(path, e),
        InputError::Utf8 { line, col, .. } => TopoError::parse(
            Loc {
                file: path.display().to_string(),
                line,
                col,
            },
            e.to_string(),
        ),
        e => TopoError::parse(Loc::file(path), e.to_string()),
    })
}
