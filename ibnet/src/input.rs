//! Reading input files safely: only regular files (a FIFO, a terminal or a
//! device such as `/dev/zero` is refused before it is opened, so nothing
//! blocks or streams forever), at most [`MAX_INPUT_BYTES`], and UTF-8
//! errors reported with their line and column.

use std::fmt;
use std::io::Read;
use std::path::Path;

/// Largest input file read (256 MiB): larger is an error, not an
/// allocation of whatever the file holds.
pub const MAX_INPUT_BYTES: u64 = 256 << 20;

/// Why an input file could not be read as text.
#[derive(Debug)]
pub enum InputError {
    Io(std::io::Error),
    /// Not a regular file (the kind is named).
    NotRegular(&'static str),
    TooLarge(u64),
    /// Invalid UTF-8 at 1-based line and column (of the bytes before it).
    Utf8 {
        line: usize,
        col: usize,
        byte: u8,
    },
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Io(e) => write!(f, "cannot read: {e}"),
            InputError::NotRegular(kind) => write!(
                f,
                "is {kind}, not a regular file (give a file; devices and FIFOs are not read)"
            ),
            InputError::TooLarge(n) => {
                write!(
                    f,
                    "is larger than {n} bytes, the most an input file may hold"
                )
            }
            InputError::Utf8 { byte, .. } => {
                write!(
                    f,
                    "invalid UTF-8 (byte 0x{byte:02x}); input files are UTF-8 text"
                )
            }
        }
    }
}

impl InputError {
    /// `file[:line:col]: problem`, the form of every input error.
    pub fn describe(&self, path: &Path) -> String {
        match self {
            InputError::Utf8 { line, col, .. } => {
                format!("{}:{line}:{col}: {self}", path.display())
            }
            _ => format!("{}: {self}", path.display()),
        }
    }
}

fn kind_name(ft: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Read a UTF-8 text file of at most [`MAX_INPUT_BYTES`].
pub fn read_text(path: &Path) -> Result<String, InputError> {
    read_text_limited(path, MAX_INPUT_BYTES)
}

/// As [`read_text`] with an explicit size limit.
pub fn read_text_limited(path: &Path, limit: u64) -> Result<String, InputError> {
    let meta = std::fs::metadata(path).map_err(InputError::Io)?;
    if !meta.is_file() {
        return Err(InputError::NotRegular(kind_name(&meta.file_type())));
    }
    let file = std::fs::File::open(path).map_err(InputError::Io)?;
    let mut buf = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(InputError::Io)?;
    if buf.len() as u64 > limit {
        return Err(InputError::TooLarge(limit));
    }
    text_of(buf)
}

/// UTF-8 text of `bytes`, or the line and column of the first bad byte.
pub fn text_of(bytes: Vec<u8>) -> Result<String, InputError> {
    String::from_utf8(bytes).map_err(|e| {
        let off = e.utf8_error().valid_up_to();
        let b = e.as_bytes();
        let before = &b[..off];
        let line = before.iter().filter(|&&c| c == b'\n').count() + 1;
        let line_start = before
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |i| i + 1);
        // column in characters of the valid text before the bad byte
        let col = std::str::from_utf8(&before[line_start..])
            .map(|s| s.chars().count())
            .unwrap_or(off - line_start)
            + 1;
        InputError::Utf8 {
            line,
            col,
            byte: b[off],
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_errors_have_line_and_column() {
        let e = text_of(b"a = 1\nb = \"\xc3\xa9x\xff\"\n".to_vec()).unwrap_err();
        match e {
            InputError::Utf8 { line, col, byte } => assert_eq!((line, col, byte), (2, 8, 0xff)),
            e => panic!("{e:?}"),
        }
        assert_eq!(text_of(b"ok\n".to_vec()).unwrap(), "ok\n");
    }

    #[test]
    fn devices_fifos_and_large_files_are_refused() {
        let e = read_text(Path::new("/dev/zero")).unwrap_err();
        assert!(e
            .describe(Path::new("/dev/zero"))
            .contains("/dev/zero: is a character device"));
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("f");
        let st = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(st.success());
        assert!(matches!(
            read_text(&fifo),
            Err(InputError::NotRegular("a FIFO"))
        ));
        let big = d.path().join("big");
        std::fs::write(&big, vec![b'x'; 1000]).unwrap();
        assert!(matches!(
            read_text_limited(&big, 999),
            Err(InputError::TooLarge(999))
        ));
        assert_eq!(read_text_limited(&big, 1000).unwrap().len(), 1000);
        assert!(matches!(
            read_text(d.path()),
            Err(InputError::NotRegular("a directory"))
        ));
    }
}
