//! Bounded reading of input files: every reader of the
//! project opens its inputs through here so that a device (`/dev/zero`), a
//! FIFO without a writer or a multi-gigabyte file cannot hang the tool or
//! exhaust memory. Inputs must be regular files; their size is limited.

use std::io::Read;
use std::path::Path;

/// Largest trace file read (per rank).
pub const MAX_TRACE_BYTES: u64 = 1 << 30;
/// Largest text file read whole for other purposes (noise traces, start
/// files, ...).
pub const MAX_SMALL_TEXT_BYTES: u64 = 256 << 20;

/// Checks that `path` names a regular file (following symlinks). Devices,
/// FIFOs, sockets and directories are refused with a message: reading them
/// could block forever or never end.
pub fn check_regular(path: &Path) -> Result<std::fs::Metadata, String> {
    let m = std::fs::metadata(path).map_err(|e| e.to_string())?;
    let ft = m.file_type();
    if ft.is_dir() {
        return Err("is a directory".into());
    }
    if !ft.is_file() {
        return Err(
            "is not a regular file (devices, FIFOs and sockets are not read: they may never \
             end; write the data to a file first)"
                .into(),
        );
    }
    Ok(m)
}

/// Opens a regular file for reading (see [`check_regular`]).
pub fn open_regular(path: &Path) -> Result<(std::fs::File, u64), String> {
    check_regular(path)?;
    let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    // Re-check on the opened file (the path could have been replaced).
    let m = f.metadata().map_err(|e| e.to_string())?;
    if !m.file_type().is_file() {
        return Err("is not a regular file".into());
    }
    Ok((f, m.len()))
}

/// Reads a whole regular file of at most `limit` bytes.
pub fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    let (f, len) = open_regular(path)?;
    if len > limit {
        return Err(format!(
            "is {len} bytes, more than the limit of {limit} bytes for this kind of input"
        ));
    }
    let mut v = Vec::with_capacity(len as usize);
    f.take(limit + 1)
        .read_to_end(&mut v)
        .map_err(|e| e.to_string())?;
    if v.len() as u64 > limit {
        return Err(format!(
            "grew beyond the limit of {limit} bytes while being read"
        ));
    }
    Ok(v)
}

/// Reads a whole regular UTF-8 text file of at most `limit` bytes.
pub fn read_text_limited(path: &Path, limit: u64) -> Result<String, String> {
    let v = read_limited(path, limit)?;
    String::from_utf8(v).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        format!("line {line}: not UTF-8 text (byte offset {at})")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_fifos_are_refused_without_blocking() {
        let e = read_limited(Path::new("/dev/zero"), 10).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("f");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: plain mkfifo(3) on a NUL-terminated path.
        assert_eq!(unsafe { libc_mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_limited(&fifo, 10).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        assert!(read_limited(d.path(), 10)
            .unwrap_err()
            .contains("directory"));
    }

    extern "C" {
        #[link_name = "mkfifo"]
        fn libc_mkfifo(path: *const std::os::raw::c_char, mode: u32) -> i32;
    }

    #[test]
    fn size_limit() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x");
        std::fs::write(&p, b"hello").unwrap();
        assert_eq!(read_limited(&p, 5).unwrap(), b"hello");
        assert!(read_limited(&p, 4).unwrap_err().contains("limit of 4"));
        std::fs::write(&p, b"a\n\xff").unwrap();
        assert!(read_text_limited(&p, 9).unwrap_err().contains("line 2"));
    }
}
