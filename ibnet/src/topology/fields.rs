//! The fields of one line of a line-based network file (IBDM `.topo` and
//! `.hcas`, rank files).

/// The `N` whitespace-separated fields of `line`, or the message that
/// `line` is not of the `form` it should have.
pub(crate) fn fields<'l, const N: usize>(
    line: &'l str,
    form: &str,
) -> Result<[&'l str; N], String> {
    let f: Vec<&str> = line.split_whitespace().collect();
    f.try_into()
        .map_err(|_| format!("expected {form}, found {line:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_n_fields() {
        assert_eq!(fields::<2>(" 3  H_1\t", "`rank hca`"), Ok(["3", "H_1"]));
        assert_eq!(
            fields::<2>("3 H_1 x", "`rank hca`"),
            Err("expected `rank hca`, found \"3 H_1 x\"".to_string())
        );
        assert_eq!(
            fields::<3>("", "three"),
            Err("expected three, found \"\"".to_string())
        );
    }
}
