//! Reading a `--config` file: Kafka's `server.properties` as Kafka users write it, or a
//! flat YAML map of the same keys.
//!
//! The format follows the file's extension: `.properties` is read as
//! `java.util.Properties` reads it (`key=value`, `key: value` and `key value`, `#` and `!`
//! comment lines, a trailing `\` continuing the line, `\t \n \r \f \uXXXX` and `\c`
//! escapes); `.yaml`, `.yml` and `.json` as YAML. Any other extension is refused with one
//! line naming the file, so a file is never read in a format its author did not mean.

use std::collections::BTreeMap;
use std::path::Path;

/// Why a config file could not be read: one line naming the file (and the line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigFileError {
    #[error("cannot read config file {path}: {reason}")]
    Read { path: String, reason: String },
    #[error(
        "config file {path}: unknown extension (Oxbow reads Kafka's .properties and YAML: .yaml, .yml, .json)"
    )]
    UnknownExtension { path: String },
    #[error("config file {path}, line {line}: {reason}")]
    Properties {
        path: String,
        line: usize,
        reason: String,
    },
    #[error("config file {path}: {reason}")]
    Yaml { path: String, reason: String },
}

/// A file's settings, in file order.
type Settings = Vec<(String, String)>;

/// The settings of one file, in file order (a key set twice: the later line wins).
pub fn read(path: &Path) -> Result<Settings, ConfigFileError> {
    let shown = path.display().to_string();
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let parse: fn(&str, &str) -> Result<Settings, ConfigFileError> = match extension.as_deref() {
        Some("properties") => parse_properties,
        Some("yaml" | "yml" | "json") => parse_yaml,
        _ => return Err(ConfigFileError::UnknownExtension { path: shown }),
    };
    let text = std::fs::read_to_string(path).map_err(|e| ConfigFileError::Read {
        path: shown.clone(),
        reason: e.to_string(),
    })?;
    parse(&shown, &text)
}

fn parse_yaml(path: &str, text: &str) -> Result<Settings, ConfigFileError> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let yaml_error = |reason: String| ConfigFileError::Yaml {
        path: path.to_string(),
        reason,
    };
    let map: BTreeMap<String, serde_yaml::Value> = serde_yaml::from_str(text).map_err(|e| {
        let hint = if text.lines().any(looks_like_a_property) {
            " (it looks like Kafka's properties format: name the file *.properties)"
        } else {
            ""
        };
        yaml_error(format!("not a flat YAML map of settings: {e}{hint}"))
    })?;
    map.into_iter()
        .map(|(key, value)| {
            let value = match value {
                serde_yaml::Value::String(s) => s,
                serde_yaml::Value::Number(n) => n.to_string(),
                serde_yaml::Value::Bool(b) => b.to_string(),
                serde_yaml::Value::Null => String::new(),
                _ => {
                    return Err(yaml_error(format!(
                        "`{key}` is a list or a map; expected a string, number or boolean"
                    )));
                }
            };
            Ok((key, value))
        })
        .collect()
}

fn looks_like_a_property(line: &str) -> bool {
    let line = line.trim_start();
    !line.starts_with('#') && line.split_once('=').is_some_and(|(k, _)| !k.contains(' '))
}

/// `java.util.Properties.load`: logical lines, comments, separators and escapes.
fn parse_properties(path: &str, text: &str) -> Result<Settings, ConfigFileError> {
    let mut settings = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((index, first)) = lines.next() {
        let first_line = index + 1;
        let trimmed = first.trim_start_matches([' ', '\t', '\x0c']);
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('!') {
            continue;
        }
        // A line ending in an odd number of backslashes continues on the next one, whose
        // leading whitespace is dropped.
        let mut logical = String::from(trimmed);
        while ends_with_continuation(&logical) {
            logical.pop();
            match lines.next() {
                Some((_, next)) => logical.push_str(next.trim_start_matches([' ', '\t', '\x0c'])),
                None => break,
            }
        }
        let (key, value) = split_key_value(&logical);
        let error = |reason: String| ConfigFileError::Properties {
            path: path.to_string(),
            line: first_line,
            reason,
        };
        let key = unescape(key).map_err(&error)?;
        let value = unescape(value).map_err(&error)?;
        if key.is_empty() {
            return Err(error(format!("no key before the value `{value}`")));
        }
        settings.push((key, value));
    }
    Ok(settings)
}

fn ends_with_continuation(line: &str) -> bool {
    line.chars().rev().take_while(|c| *c == '\\').count() % 2 == 1
}

/// The key ends at the first unescaped `=`, `:` or whitespace; the separator is
/// whitespace, then at most one `=` or `:`, then whitespace.
fn split_key_value(line: &str) -> (&str, &str) {
    let mut escaped = false;
    let mut key_end = line.len();
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '=' | ':' | ' ' | '\t' | '\x0c' => {
                key_end = i;
                break;
            }
            _ => {}
        }
    }
    let key = &line[..key_end];
    let rest = line[key_end..].trim_start_matches([' ', '\t', '\x0c']);
    let rest = rest
        .strip_prefix(['=', ':'])
        .map(|r| r.trim_start_matches([' ', '\t', '\x0c']))
        .unwrap_or(rest);
    (key, rest)
}

fn unescape(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\x0c'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = (hex.len() == 4)
                    .then(|| u32::from_str_radix(&hex, 16).ok())
                    .flatten()
                    .and_then(char::from_u32)
                    .ok_or_else(|| format!("malformed \\u escape `\\u{hex}`"))?;
                out.push(code);
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(text: &str) -> Settings {
        parse_properties("server.properties", text).unwrap()
    }

    fn pair(k: &str, v: &str) -> (String, String) {
        (k.to_string(), v.to_string())
    }

    #[test]
    fn kafkas_server_properties_is_read_as_java_reads_it() {
        let text = "# The role of this server\n\
                    ! another comment style\n\
                    \n\
                    process.roles=broker,controller\n\
                    node.id = 1\n\
                    listeners: PLAINTEXT://:9092,CONTROLLER://:9093\n\
                    log.dirs /tmp/kraft-combined-logs\n\
                    \tnum.partitions=3\n\
                    controller.quorum.bootstrap.servers=localhost:9093,\\\n\
                    \x20   localhost:9094\n\
                    sasl.jaas.config=a\\=b\\:c \\\\ \\u00e9\\t\n\
                    empty.value=\n\
                    key\\ with\\ spaces=x\n";
        assert_eq!(
            props(text),
            vec![
                pair("process.roles", "broker,controller"),
                pair("node.id", "1"),
                pair("listeners", "PLAINTEXT://:9092,CONTROLLER://:9093"),
                pair("log.dirs", "/tmp/kraft-combined-logs"),
                pair("num.partitions", "3"),
                pair(
                    "controller.quorum.bootstrap.servers",
                    "localhost:9093,localhost:9094"
                ),
                pair("sasl.jaas.config", "a=b:c \\ \u{e9}\t"),
                pair("empty.value", ""),
                pair("key with spaces", "x"),
            ]
        );
    }

    #[test]
    fn an_even_run_of_backslashes_does_not_continue_the_line() {
        assert_eq!(
            props("a=x\\\\\nb=y\n"),
            vec![pair("a", "x\\"), pair("b", "y")]
        );
        // A continuation on the last line ends the value there.
        assert_eq!(props("a=x\\"), vec![pair("a", "x")]);
    }

    #[test]
    fn a_malformed_line_is_named_with_its_file_and_line() {
        let error = parse_properties("server.properties", "a=1\n\nb=\\u12\n").unwrap_err();
        assert_eq!(
            error.to_string(),
            "config file server.properties, line 3: malformed \\u escape `\\u12`"
        );
        let error = parse_properties("server.properties", "a=1\n=2\n").unwrap_err();
        assert_eq!(
            error.to_string(),
            "config file server.properties, line 2: no key before the value `2`"
        );
    }

    #[test]
    fn the_extension_picks_the_format_and_an_unknown_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let properties = dir.path().join("server.properties");
        std::fs::write(
            &properties,
            "num.partitions=4\nlisteners=PLAINTEXT://:9092\n",
        )
        .unwrap();
        assert_eq!(
            read(&properties).unwrap(),
            vec![
                pair("num.partitions", "4"),
                pair("listeners", "PLAINTEXT://:9092")
            ]
        );
        let yaml = dir.path().join("broker.yml");
        std::fs::write(
            &yaml,
            "num.partitions: 4\nauto.create.topics.enable: false\n",
        )
        .unwrap();
        assert_eq!(
            read(&yaml).unwrap(),
            vec![
                pair("auto.create.topics.enable", "false"),
                pair("num.partitions", "4")
            ]
        );
        let conf = dir.path().join("server.conf");
        std::fs::write(&conf, "num.partitions=4\n").unwrap();
        let error = read(&conf).unwrap_err().to_string();
        assert!(
            error.contains("server.conf") && error.contains(".properties"),
            "{error}"
        );
        // Properties written into a .yaml file: the message says what it looks like.
        let mislabelled = dir.path().join("server.yaml");
        std::fs::write(
            &mislabelled,
            "num.partitions=4\nlisteners=PLAINTEXT://:9092\n",
        )
        .unwrap();
        let error = read(&mislabelled).unwrap_err().to_string();
        assert!(error.contains("name the file *.properties"), "{error}");
    }
}
