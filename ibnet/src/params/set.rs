//! Reading parameters: a TOML configuration text (`--config`, and the
//! shipped presets of configs/presets/) and `--set key=value` overrides,
//! both applied on top of a base parameter set (docs/model/fabric.md 7).
//!
//! A TOML text goes through four steps: [`parse_doc`] (syntax, with line
//! and column), the base preset its `preset` key names, [`merge`] (every
//! key known, of the right type) and the conversion to [`Params`], whose
//! checks name the line of the offending key.

use super::{ConfigError, Params};

impl Params {
    /// Every key with its value (also `sink_packet_gap_periods`, which the
    /// serialisation of reports leaves out when 0).
    pub(super) fn to_table(&self) -> toml::Table {
        match toml::Value::try_from(self) {
            Ok(toml::Value::Table(mut t)) => {
                t.insert(
                    "sink_packet_gap_periods".into(),
                    toml::Value::Integer(self.sink_packet_gap_periods.into()),
                );
                // the keys of queue pairs, lossy links, one-sided operations and
                // the host interface (docs/rdma.md), which reports leave out at
                // their defaults
                t.insert(
                    "send_queues".into(),
                    toml::Value::String(self.send_queues.clone()),
                );
                t.insert(
                    "link_packet_error_rate".into(),
                    toml::Value::Float(self.link_packet_error_rate),
                );
                t.insert(
                    "link_bit_error_rate".into(),
                    toml::Value::Float(self.link_bit_error_rate),
                );
                t.insert("rto_ns".into(), toml::Value::Float(self.rto_ns));
                t.insert(
                    "link_delay_ns".into(),
                    toml::Value::Float(self.link_delay_ns),
                );
                t.insert(
                    "vl_arb_rr_per_vl".into(),
                    toml::Value::Boolean(self.vl_arb_rr_per_vl),
                );
                t.insert(
                    "event_order".into(),
                    toml::Value::String(self.event_order.clone()),
                );
                crate::hostparams::insert_keys(self, &mut t);
                t
            }
            _ => unreachable!("Params serialises to a table"),
        }
    }

    pub(super) fn from_table(t: toml::Table, origin: &str) -> Result<Params, ConfigError> {
        toml::Value::Table(t)
            .try_into::<Params>()
            .map_err(|e| ConfigError::File {
                file: origin.to_string(),
                msg: e.to_string(),
            })
    }

    /// Apply a TOML configuration text (flat table of parameter keys; an
    /// optional `preset = "name"` key first selects a base preset).
    pub fn apply_toml(&self, text: &str, origin: &str) -> Result<Params, ConfigError> {
        let doc = parse_doc(text, origin)?;
        let at = |key: &str| key_at(text, origin, key);
        let base = match doc.get("preset") {
            Some(p) => base_preset(p, &at)?,
            None => self.clone(),
        };
        let mut t = base.to_table();
        merge(&mut t, doc, &at)?;
        let p = from_table_at(t, origin, &at)?;
        check_at(&p, origin, &at)?;
        Ok(p)
    }

    /// Apply one `key=value` override. The value is read as TOML (numbers,
    /// booleans, arrays, quoted strings); a bare word is taken as a string.
    pub fn apply_override(&self, kv: &str) -> Result<Params, ConfigError> {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| ConfigError::MalformedOverride(kv.to_string()))?;
        let key = k.trim().replace('-', "_");
        let mut t = self.to_table();
        let old = t.get(&key).ok_or_else(|| ConfigError::UnknownKey {
            key: key.clone(),
            hint: String::new(),
        })?;
        let raw = v.trim();
        let value = if old.is_str() && !raw.starts_with('"') {
            toml::Value::String(raw.to_string())
        } else {
            let doc: toml::Table =
                format!("x = {raw}")
                    .parse()
                    .map_err(|_| ConfigError::BadValue {
                        key: key.clone(),
                        msg: format!("cannot parse `{raw}`"),
                    })?;
            as_type_of(old, doc["x"].clone())
        };
        if std::mem::discriminant(old) != std::mem::discriminant(&value) {
            return Err(ConfigError::BadValue {
                key,
                msg: format!("`{raw}` has the wrong type (expected {})", old.type_str()),
            });
        }
        t.insert(key.clone(), value);
        Params::from_table(t, &format!("--set {key}"))
    }
}

/// Every parameter key (the TOML keys of [`Params`]).
pub static PARAM_KEYS: std::sync::LazyLock<Vec<String>> =
    std::sync::LazyLock::new(|| Params::qdr().to_table().keys().cloned().collect());

/// Step 1: the TOML text as a table; a syntax error names `origin:line:col`.
pub(super) fn parse_doc(text: &str, origin: &str) -> Result<toml::Table, ConfigError> {
    text.parse().map_err(|e: toml::de::Error| {
        let (line, col) = e.span().map(|s| line_col(text, s.start)).unwrap_or((0, 0));
        ConfigError::File {
            file: format!("{origin}:{line}:{col}"),
            msg: e.message().trim().to_string(),
        }
    })
}

/// `origin:line` of the line that sets `key`, or `origin` alone.
pub(super) fn key_at(text: &str, origin: &str, key: &str) -> String {
    match key_line(text, key) {
        Some(l) => format!("{origin}:{l}"),
        None => origin.to_string(),
    }
}

/// Step 2: the preset a `preset = "name"` key selects as the base.
fn base_preset(p: &toml::Value, at: &dyn Fn(&str) -> String) -> Result<Params, ConfigError> {
    let name = p.as_str().ok_or_else(|| ConfigError::File {
        file: at("preset"),
        msg: "preset: expected a string".into(),
    })?;
    Params::preset(name).map_err(|e| ConfigError::File {
        file: at("preset"),
        msg: e.to_string(),
    })
}

/// Step 3: set every key of `doc` (but `preset`) in the full table `t` of
/// a base; a key `t` lacks is unknown, a value of another type than the
/// base's is an error (an integer is accepted for a float parameter).
pub(super) fn merge(
    t: &mut toml::Table,
    doc: toml::Table,
    at: &dyn Fn(&str) -> String,
) -> Result<(), ConfigError> {
    for (k, v) in doc {
        if k == "preset" {
            continue;
        }
        let Some(old) = t.get(&k) else {
            return Err(ConfigError::UnknownKey {
                hint: format!(" in {}", at(&k)),
                key: k,
            });
        };
        let v = as_type_of(old, v);
        if std::mem::discriminant(old) != std::mem::discriminant(&v) {
            return Err(ConfigError::File {
                file: at(&k),
                msg: format!(
                    "parameter `{k}`: {} has the wrong type (expected {})",
                    v,
                    old.type_str()
                ),
            });
        }
        t.insert(k, v);
    }
    Ok(())
}

/// An integer given for a float parameter, as that float.
fn as_type_of(old: &toml::Value, v: toml::Value) -> toml::Value {
    match v.as_integer() {
        Some(i) if old.is_float() => toml::Value::Float(i as f64),
        _ => v,
    }
}

/// Step 4: the merged table as [`Params`]; an error names the line of the
/// key it is about, if any.
fn from_table_at(
    t: toml::Table,
    origin: &str,
    at: &dyn Fn(&str) -> String,
) -> Result<Params, ConfigError> {
    Params::from_table(t, origin).map_err(|e| match e {
        ConfigError::File { msg, .. } => {
            let key = PARAM_KEYS.iter().find(|k| msg.contains(&format!("`{k}`")));
            ConfigError::File {
                file: key.map_or(origin.to_string(), |k| at(k)),
                msg: msg.trim().replace('\n', " "),
            }
        }
        e => e,
    })
}

/// Step 5: range and consistency errors name the file and the key's line.
fn check_at(p: &Params, origin: &str, at: &dyn Fn(&str) -> String) -> Result<(), ConfigError> {
    p.check().map_err(|e| match e {
        ConfigError::BadValue { key, msg } => ConfigError::File {
            file: at(&key),
            msg: format!("parameter `{key}`: {msg}"),
        },
        ConfigError::File { .. } => e,
        e => ConfigError::File {
            file: origin.to_string(),
            msg: e.to_string(),
        },
    })
}

/// 1-based line of the first `key = ...` line of a flat TOML text.
fn key_line(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            let rest = l
                .strip_prefix(key)
                .or_else(|| l.strip_prefix(&format!("\"{key}\"")));
            rest.is_some_and(|r| r.trim_start().starts_with('='))
        })
        .map(|i| i + 1)
}

fn line_col(text: &str, off: usize) -> (usize, usize) {
    let before = &text[..off.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides() {
        let p = Params::qdr().apply_override("isw_delay_ns=40").unwrap();
        assert_eq!(p.isw_delay_ns, 40.0);
        let p = p.apply_override("link_speed=DDR").unwrap();
        assert_eq!(p.link_speed, "DDR");
        let e = p.apply_override("no_such=1").unwrap_err();
        assert!(e.to_string().contains("no_such"), "{e}");
        assert!(p.apply_override("isw_delay_ns").is_err());
        assert!(p.apply_override("isw_delay_ns=abc").is_err());
        assert!(p.apply_override("max_vl=true").is_err());
        let e = p
            .apply_toml("isw_delay_ns = 3\nbogus = 2\n", "x.toml")
            .unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
        let q = p
            .apply_toml("preset = \"thesis-ddr\"\nvsw_delay_ns = 7.5\n", "x.toml")
            .unwrap();
        assert_eq!((q.vsw_delay_ns, q.pkt_header_bytes), (7.5, 20));
        let e = p.apply_toml("isw_delay_ns = \n", "x.toml").unwrap_err();
        assert!(e.to_string().contains("x.toml:1"), "{e}");
    }

    #[test]
    fn lines_and_columns() {
        let text = "# c\nisw_delay_ns = 1\n  \"vsw_delay_ns\" = 2\nisw = 3\n";
        assert_eq!(key_line(text, "isw_delay_ns"), Some(2));
        assert_eq!(key_line(text, "vsw_delay_ns"), Some(3));
        assert_eq!(key_line(text, "isw"), Some(4));
        assert_eq!(key_line(text, "none"), None);
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 6), (2, 3));
        assert_eq!(key_at(text, "f", "vsw_delay_ns"), "f:3");
        assert_eq!(key_at(text, "f", "none"), "f");
    }

    #[test]
    fn merge_checks_keys_and_types() {
        let at = |k: &str| format!("f:{k}");
        let mut t = Params::qdr().to_table();
        let doc = parse_doc("preset = 1\nisw_delay_ns = 3\nmax_vl = 1\n", "f").unwrap();
        merge(&mut t, doc, &at).unwrap();
        assert_eq!(t["isw_delay_ns"], toml::Value::Float(3.0));
        assert_eq!(t["max_vl"], toml::Value::Integer(1));
        assert!(!t.contains_key("preset"));
        let e = merge(&mut t, parse_doc("bogus = 1", "f").unwrap(), &at).unwrap_err();
        assert_eq!(e.to_string(), "unknown parameter `bogus` in f:bogus");
        let e = merge(&mut t, parse_doc("max_vl = 1.5", "f").unwrap(), &at).unwrap_err();
        assert_eq!(
            e.to_string(),
            "f:max_vl: parameter `max_vl`: 1.5 has the wrong type (expected integer)"
        );
        let e = parse_doc("x = = 1", "f").unwrap_err();
        assert!(e.to_string().starts_with("f:1:"), "{e}");
    }

    #[test]
    fn config_errors_name_the_key_line() {
        let p = Params::qdr();
        let e = p.apply_toml("\nmax_vl = 9\n", "c.toml").unwrap_err();
        assert_eq!(e.to_string(), "c.toml:2: parameter `max_vl`: at most 7");
        let e = p.apply_toml("preset = \"nope\"\n", "c.toml").unwrap_err();
        assert!(
            e.to_string().starts_with("c.toml:1: unknown preset `nope`"),
            "{e}"
        );
        let e = p.apply_toml("preset = 3\n", "c.toml").unwrap_err();
        assert_eq!(e.to_string(), "c.toml:1: preset: expected a string");
        // a preset replaces the base; keys apply on top of it
        let q = Params::hcyang99()
            .apply_toml("preset = \"qdr\"\nmax_vl = 1\n", "c.toml")
            .unwrap();
        assert_eq!(
            q,
            Params {
                max_vl: 1,
                ..Params::qdr()
            }
        );
    }
}
