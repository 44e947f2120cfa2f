//! Kafka's config providers (KIP-297, KIP-887): a value may hold `${NAME:[path:]key}`,
//! looked up through the provider `config.providers` names and
//! `config.providers.NAME.class` chooses. The operator uses `${env:HOST_IP}` to advertise a
//! broker's node address, which only the kubelet knows; Kubernetes Secrets mounted as
//! files reach a setting through the file and directory providers.
//!
//! Kafka's rules, kept: a variable whose provider is not configured, or whose key the
//! provider does not have, stays as written; a provider that cannot read its source (a
//! missing file) is an error; the env provider takes no path.

use std::collections::BTreeMap;
use std::path::Path;

use regex::Regex;

use super::ConfigError;

/// The key listing the providers' names.
pub const PROVIDERS_KEY: &str = "config.providers";
/// Prefix of each provider's own keys: `config.providers.NAME.class`,
/// `config.providers.NAME.param.PARAM`.
pub const PROVIDER_PREFIX: &str = "config.providers.";

const ENV_CLASS: &str = "org.apache.kafka.common.config.provider.EnvVarConfigProvider";
const FILE_CLASS: &str = "org.apache.kafka.common.config.provider.FileConfigProvider";
const DIRECTORY_CLASS: &str = "org.apache.kafka.common.config.provider.DirectoryConfigProvider";

/// Kafka's `ConfigTransformer.DEFAULT_PATTERN` with `}` kept out of the parts: Kafka's
/// `.*?` lets a second variable in the same value become part of the first one's path, so
/// `PLAINTEXT://${env:IP}:9092,CONTROLLER://${env:IP}:9093` fails there; here each
/// variable resolves. A value Kafka resolves, Oxbow resolves the same.
const VARIABLE: &str = r"\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}";

#[derive(Debug)]
enum Provider {
    /// Environment variables whose names match the allow-list (`param.allowlist.pattern`).
    Env { allow: Regex },
    /// `path` is a properties file; the key is one of its properties.
    File,
    /// `path` is a directory; the key is a file name in it, the value its contents.
    Directory,
}

/// Replaces every `${NAME:[path:]key}` in `raw`'s values. `provider_keys` holds the
/// `config.providers.NAME.*` settings; `env` the process environment.
pub fn resolve(
    raw: &mut BTreeMap<String, String>,
    provider_keys: &BTreeMap<String, String>,
    env: &BTreeMap<String, String>,
) -> Result<(), ConfigError> {
    let names: Vec<String> = raw
        .get(PROVIDERS_KEY)
        .map(|list| {
            list.split(',')
                .map(|name| name.trim().to_string())
                .filter(|name| !name.is_empty())
                .collect()
        })
        .unwrap_or_default();
    for key in provider_keys.keys() {
        let name = key
            .strip_prefix(PROVIDER_PREFIX)
            .and_then(|rest| rest.split('.').next())
            .unwrap_or_default();
        if !names.iter().any(|n| n == name) {
            return Err(invalid(
                key,
                provider_keys
                    .get(key)
                    .map(String::as_str)
                    .unwrap_or_default(),
                &format!("provider `{name}` is not listed in {PROVIDERS_KEY}"),
            ));
        }
    }
    let mut providers = BTreeMap::new();
    for name in &names {
        providers.insert(name.clone(), provider(name, provider_keys)?);
    }
    let variable = Regex::new(VARIABLE).map_err(|e| invalid(PROVIDERS_KEY, "", &e.to_string()))?;
    for (key, value) in raw.iter_mut() {
        if key == PROVIDERS_KEY || !value.contains("${") {
            continue;
        }
        let mut resolved = String::with_capacity(value.len());
        let mut last = 0;
        for found in variable.captures_iter(value) {
            let (Some(whole), Some(name)) = (found.get(0), found.get(1)) else {
                continue;
            };
            let path = found.get(3).map_or("", |m| m.as_str());
            let lookup = found.get(4).map_or("", |m| m.as_str());
            resolved.push_str(&value[last..whole.start()]);
            let replacement = match providers.get(name.as_str()) {
                Some(provider) => provider
                    .get(path, lookup, env)
                    .map_err(|reason| invalid(key, whole.as_str(), &reason))?,
                None => None,
            };
            resolved.push_str(replacement.as_deref().unwrap_or(whole.as_str()));
            last = whole.end();
        }
        resolved.push_str(&value[last..]);
        *value = resolved;
    }
    Ok(())
}

fn provider(name: &str, keys: &BTreeMap<String, String>) -> Result<Provider, ConfigError> {
    let class_key = format!("{PROVIDER_PREFIX}{name}.class");
    let class = keys.get(&class_key).map(|c| c.trim()).unwrap_or_default();
    let param = |param: &str| keys.get(&format!("{PROVIDER_PREFIX}{name}.param.{param}"));
    match class {
        ENV_CLASS => {
            let pattern = param("allowlist.pattern").map_or(".*", String::as_str);
            let allow = Regex::new(&format!("^(?:{pattern})$")).map_err(|e| {
                invalid(
                    &format!("{PROVIDER_PREFIX}{name}.param.allowlist.pattern"),
                    pattern,
                    &e.to_string(),
                )
            })?;
            Ok(Provider::Env { allow })
        }
        FILE_CLASS => Ok(Provider::File),
        DIRECTORY_CLASS => Ok(Provider::Directory),
        "" => Err(invalid(
            &class_key,
            "",
            &format!("provider `{name}` is listed in {PROVIDERS_KEY} but has no class"),
        )),
        other => Err(invalid(
            &class_key,
            other,
            &format!("Oxbow provides {ENV_CLASS}, {FILE_CLASS} and {DIRECTORY_CLASS}"),
        )),
    }
}

impl Provider {
    /// The value of `key` at `path`; `None` when the source has no such key.
    fn get(
        &self,
        path: &str,
        key: &str,
        env: &BTreeMap<String, String>,
    ) -> Result<Option<String>, String> {
        match self {
            Provider::Env { allow } => {
                if !path.is_empty() {
                    return Err(format!(
                        "the environment provider takes no path, got `{path}`"
                    ));
                }
                Ok(env.get(key).filter(|_| allow.is_match(key)).cloned())
            }
            Provider::File => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read properties file {path}: {e}"))?;
                Ok(properties(&text).remove(key))
            }
            Provider::Directory => {
                // Only a plain file directly in the directory: a key cannot climb out of it.
                if key.is_empty() || key.contains('/') || key == "." || key == ".." {
                    return Ok(None);
                }
                let dir = Path::new(path);
                if !dir.is_dir() {
                    return Err(format!("{path} is not a directory"));
                }
                let file = dir.join(key);
                if !file.is_file() {
                    return Ok(None);
                }
                std::fs::read_to_string(&file)
                    .map(Some)
                    .map_err(|e| format!("cannot read {}: {e}", file.display()))
            }
        }
    }
}

/// The `key=value` / `key: value` lines of a Java properties file (comments, blank lines
/// and backslash line continuations as `java.util.Properties` reads them; no unicode
/// escapes).
fn properties(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut logical = String::new();
    for line in text.lines() {
        let line = line.trim_start();
        if logical.is_empty() && (line.is_empty() || line.starts_with('#') || line.starts_with('!'))
        {
            continue;
        }
        let continued = line.ends_with('\\') && !line.ends_with("\\\\");
        logical.push_str(if continued {
            &line[..line.len() - 1]
        } else {
            line
        });
        if continued {
            continue;
        }
        let split = logical
            .find(['=', ':'])
            .map(|at| (logical[..at].trim_end(), logical[at + 1..].trim_start()))
            .or_else(|| {
                logical
                    .split_once(char::is_whitespace)
                    .map(|(k, v)| (k, v.trim_start()))
            });
        let (key, value) = split.unwrap_or((logical.as_str(), ""));
        out.insert(key.to_string(), value.to_string());
        logical.clear();
    }
    out
}

fn invalid(key: &str, value: &str, reason: &str) -> ConfigError {
    ConfigError::InvalidValue {
        key: key.to_string(),
        value: value.to_string(),
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn env_provider() -> BTreeMap<String, String> {
        map(&[("config.providers.env.class", ENV_CLASS)])
    }

    #[test]
    fn env_variables_are_substituted_in_place() {
        let mut raw = map(&[
            (PROVIDERS_KEY, "env"),
            (
                "advertised.listeners",
                "PLAINTEXT://a:9092,EXTERNAL://${env:HOST_IP}:30094",
            ),
        ]);
        let env = map(&[("HOST_IP", "10.0.0.3")]);
        resolve(&mut raw, &env_provider(), &env).unwrap();
        assert_eq!(
            raw["advertised.listeners"],
            "PLAINTEXT://a:9092,EXTERNAL://10.0.0.3:30094"
        );
    }

    #[test]
    fn several_variables_in_one_value_each_resolve() {
        let mut raw = map(&[
            (PROVIDERS_KEY, "env"),
            (
                "listeners",
                "PLAINTEXT://${env:IP}:9092,CONTROLLER://${env:IP}:9093",
            ),
        ]);
        resolve(&mut raw, &env_provider(), &map(&[("IP", "10.0.0.9")])).unwrap();
        assert_eq!(
            raw["listeners"],
            "PLAINTEXT://10.0.0.9:9092,CONTROLLER://10.0.0.9:9093"
        );
    }

    #[test]
    fn unknown_providers_and_missing_keys_stay_as_written() {
        let mut raw = map(&[
            (PROVIDERS_KEY, "env"),
            ("a", "${vault:secret/x:pw}"),
            ("b", "x-${env:NOT_SET}-y"),
        ]);
        resolve(&mut raw, &env_provider(), &BTreeMap::new()).unwrap();
        assert_eq!(raw["a"], "${vault:secret/x:pw}");
        assert_eq!(raw["b"], "x-${env:NOT_SET}-y");
        // Without config.providers nothing is looked up, as in Kafka.
        let mut raw = map(&[("b", "${env:HOME}")]);
        resolve(&mut raw, &BTreeMap::new(), &map(&[("HOME", "/root")])).unwrap();
        assert_eq!(raw["b"], "${env:HOME}");
    }

    #[test]
    fn the_allow_list_hides_other_variables() {
        let mut keys = env_provider();
        keys.insert(
            "config.providers.env.param.allowlist.pattern".into(),
            "HOST_.*".into(),
        );
        let mut raw = map(&[
            (PROVIDERS_KEY, "env"),
            ("a", "${env:HOST_IP}"),
            ("b", "${env:SECRET}"),
        ]);
        let env = map(&[("HOST_IP", "h"), ("SECRET", "s")]);
        resolve(&mut raw, &keys, &env).unwrap();
        assert_eq!(
            (raw["a"].as_str(), raw["b"].as_str()),
            ("h", "${env:SECRET}")
        );
    }

    #[test]
    fn file_and_directory_providers_read_mounted_secrets() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("creds.properties"),
            "# comment\nuser = alice\npassword=p\\\n  w:d\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("token"), "t0k3n").unwrap();
        let keys = map(&[
            ("config.providers.file.class", FILE_CLASS),
            ("config.providers.dir.class", DIRECTORY_CLASS),
        ]);
        let base = dir.path().display().to_string();
        let mut raw = map(&[
            (PROVIDERS_KEY, "file, dir"),
            ("u", &format!("${{file:{base}/creds.properties:user}}")),
            ("p", &format!("${{file:{base}/creds.properties:password}}")),
            ("t", &format!("${{dir:{base}:token}}")),
            ("escape", &format!("${{dir:{base}:../etc}}")),
        ]);
        resolve(&mut raw, &keys, &BTreeMap::new()).unwrap();
        assert_eq!(raw["u"], "alice");
        assert_eq!(raw["p"], "pw:d");
        assert_eq!(raw["t"], "t0k3n");
        assert!(raw["escape"].starts_with("${dir:"));
    }

    #[test]
    fn misconfigured_providers_are_refused_with_the_key() {
        let cases: [(&str, BTreeMap<String, String>); 3] = [
            ("env", BTreeMap::new()),
            (
                "env",
                map(&[("config.providers.env.class", "com.example.Vault")]),
            ),
            ("", env_provider()),
        ];
        for (names, keys) in cases {
            let mut raw = map(&[(PROVIDERS_KEY, names)]);
            let error = resolve(&mut raw, &keys, &BTreeMap::new()).unwrap_err();
            assert!(
                error.to_string().contains("config.providers.env.class"),
                "{error}"
            );
        }
        let mut raw = map(&[
            (PROVIDERS_KEY, "file"),
            ("a", "${file:/nonexistent/x.properties:k}"),
        ]);
        let keys = map(&[("config.providers.file.class", FILE_CLASS)]);
        let error = resolve(&mut raw, &keys, &BTreeMap::new()).unwrap_err();
        assert!(
            error.to_string().contains("/nonexistent/x.properties"),
            "{error}"
        );
        let mut raw = map(&[(PROVIDERS_KEY, "env"), ("a", "${env:some/path:K}")]);
        let error = resolve(&mut raw, &env_provider(), &BTreeMap::new()).unwrap_err();
        assert!(error.to_string().contains("no path"), "{error}");
    }
}
