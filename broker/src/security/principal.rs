//! Who a connection is: Kafka's `KafkaPrincipal`, and how a client certificate's subject
//! becomes one (`ssl.principal.mapping.rules`).
//!
//! ```text
//!   certificate subject (DER) ─► RFC 2253 string, as Java's X500Principal.getName():
//!                                 last RDN first, `CN=app,OU=eng,O=Example,C=DE`
//!                              ─► rules, first whose pattern matches the whole string:
//!                                 RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/L ─► `app@eng`
//!                                 DEFAULT                            ─► the string itself
//!                              ─► `User:<name>`; no rule matching refuses the handshake
//! ```

use std::fmt;

use regex::Regex;

/// A connection's identity, as Kafka writes it (`User:alice`, `User:ANONYMOUS`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal {
    pub kind: &'static str,
    pub name: String,
}

impl Principal {
    /// A connection that proved nothing (plaintext, or TLS without a client certificate).
    pub fn anonymous() -> Self {
        Self::user("ANONYMOUS")
    }

    pub fn user(name: impl Into<String>) -> Self {
        Self {
            kind: "User",
            name: name.into(),
        }
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind, self.name)
    }
}

/// One entry of `ssl.principal.mapping.rules`.
#[derive(Debug, Clone)]
enum Rule {
    Default,
    Replace {
        /// Anchored: the rule applies only when the pattern matches the whole subject.
        whole: Regex,
        pattern: Regex,
        /// In the regex crate's syntax (`${1}`), converted from Java's (`$1`).
        replacement: String,
        case: Case,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Keep,
    Lower,
    Upper,
}

/// `ssl.principal.mapping.rules`, parsed.
#[derive(Debug, Clone)]
pub struct PrincipalMapper {
    rules: Vec<Rule>,
}

impl PrincipalMapper {
    /// Kafka's syntax: `RULE:pattern/replacement/[LU]` entries and `DEFAULT`, separated by
    /// commas; `\` escapes a `/` or `,` inside a pattern or replacement.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut rules = Vec::new();
        for entry in split_rules(text)? {
            let entry = entry.trim();
            if entry.is_empty() {
                continue;
            }
            if entry == "DEFAULT" {
                rules.push(Rule::Default);
                continue;
            }
            let Some(body) = entry.strip_prefix("RULE:") else {
                return Err(format!(
                    "`{entry}` is neither DEFAULT nor RULE:pattern/replacement/[LU]"
                ));
            };
            let parts = split_unescaped(body, '/');
            let (pattern, replacement, flags) = match parts.as_slice() {
                [pattern, replacement, flags] => (pattern, replacement, flags.as_str()),
                _ => return Err(format!("`{entry}` is not RULE:pattern/replacement/[LU]")),
            };
            let case = match flags {
                "" => Case::Keep,
                "L" => Case::Lower,
                "U" => Case::Upper,
                other => return Err(format!("`{other}` in `{entry}` is not L or U")),
            };
            let pattern = unescape(pattern, &['/', ',']);
            let compiled =
                Regex::new(&pattern).map_err(|e| format!("pattern of `{entry}`: {e}"))?;
            let whole = Regex::new(&format!("^(?:{pattern})$"))
                .map_err(|e| format!("pattern of `{entry}`: {e}"))?;
            rules.push(Rule::Replace {
                whole,
                pattern: compiled,
                replacement: java_replacement(replacement),
                case,
            });
        }
        if rules.is_empty() {
            rules.push(Rule::Default);
        }
        Ok(Self { rules })
    }

    /// The principal name for a certificate subject (RFC 2253), or `None` when no rule
    /// matches (Kafka refuses the connection then).
    pub fn map(&self, subject: &str) -> Option<String> {
        self.rules.iter().find_map(|rule| match rule {
            Rule::Default => Some(subject.to_string()),
            Rule::Replace {
                whole,
                pattern,
                replacement,
                case,
            } => {
                if !whole.is_match(subject) {
                    return None;
                }
                let mapped = pattern
                    .replace_all(subject, replacement.as_str())
                    .into_owned();
                Some(match case {
                    Case::Keep => mapped,
                    Case::Lower => mapped.to_lowercase(),
                    Case::Upper => mapped.to_uppercase(),
                })
            }
        })
    }
}

/// Splits the rule list at commas that are not escaped and not inside a RULE's pattern
/// or replacement (a RULE has exactly three `/`-separated parts after `RULE:`).
fn split_rules(text: &str) -> Result<Vec<String>, String> {
    let mut rules = Vec::new();
    let mut current = String::new();
    let mut slashes = 0;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                current.push(c);
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            '/' if current.trim_start().starts_with("RULE:") => {
                slashes += 1;
                current.push(c);
            }
            ',' if !current.trim_start().starts_with("RULE:") || slashes >= 2 => {
                rules.push(std::mem::take(&mut current));
                slashes = 0;
            }
            _ => current.push(c),
        }
    }
    if current.trim_start().starts_with("RULE:") && slashes < 2 {
        return Err(format!(
            "`{}` is not RULE:pattern/replacement/[LU]",
            current.trim()
        ));
    }
    rules.push(current);
    Ok(rules)
}

/// `text` split at `separator`s not preceded by a backslash (escapes kept).
fn split_unescaped(text: &str, separator: char) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                current.push(c);
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            c if c == separator => parts.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    parts.push(current);
    parts
}

/// Drops the backslash before the rule syntax's own characters; other escapes are the
/// regex's and stay.
fn unescape(text: &str, own: &[char]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(next) = chars.peek()
            && own.contains(next)
        {
            continue;
        }
        out.push(c);
    }
    out
}

/// Java's replacement syntax (`$1`, `\$` for a literal dollar) in the regex crate's
/// (`${1}`, `$$`): `$1abc` in Java is group 1 then `abc`, in the regex crate a group
/// named `1abc`.
fn java_replacement(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('$') => out.push_str("$$"),
                Some(other) => out.push(other),
                None => {}
            },
            '$' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                if digits.is_empty() {
                    out.push_str("$$");
                } else {
                    out.push_str(&format!("${{{digits}}}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// A certificate's subject as Java's `X500Principal.getName()` (RFC 2253) writes it: the
/// RDNs last first, joined by `,`; attributes of one RDN joined by `+`; the keywords
/// Java knows (CN, C, L, ST, O, OU, STREET, DC, UID), other types as dotted OIDs with the
/// value's DER in hex (`1.2.840.113549.1.9.1=#1611...`).
pub fn subject_name(certificate_der: &[u8]) -> Result<String, String> {
    use x509_parser::der_parser::asn1_rs::ToDer;
    use x509_parser::prelude::{FromDer, X509Certificate};
    let (_, certificate) = X509Certificate::from_der(certificate_der)
        .map_err(|e| format!("cannot read the certificate: {e}"))?;
    let mut rdns = Vec::new();
    for rdn in certificate.subject().iter_rdn() {
        let mut attributes = Vec::new();
        for attribute in rdn.iter() {
            let oid = attribute.attr_type().to_id_string();
            let keyword = match oid.as_str() {
                "2.5.4.3" => Some("CN"),
                "2.5.4.6" => Some("C"),
                "2.5.4.7" => Some("L"),
                "2.5.4.8" => Some("ST"),
                "2.5.4.9" => Some("STREET"),
                "2.5.4.10" => Some("O"),
                "2.5.4.11" => Some("OU"),
                "0.9.2342.19200300.100.1.25" => Some("DC"),
                "0.9.2342.19200300.100.1.1" => Some("UID"),
                _ => None,
            };
            match (keyword, attribute.as_str()) {
                (Some(keyword), Ok(value)) => {
                    attributes.push(format!("{keyword}={}", escape_value(value)));
                }
                _ => {
                    let der = attribute
                        .attr_value()
                        .to_der_vec()
                        .map_err(|e| e.to_string())?;
                    let hex: String = der.iter().map(|b| format!("{b:02x}")).collect();
                    attributes.push(format!("{oid}=#{hex}"));
                }
            }
        }
        rdns.push(attributes.join("+"));
    }
    rdns.reverse();
    Ok(rdns.join(","))
}

/// RFC 2253 escaping: `,+"\<>;` anywhere, `#` first, a space first or last.
fn escape_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (c == '#' && i == 0)
            || (c == ' ' && (i == 0 || i == last));
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn certificate(subject: &[(rcgen::DnType, &str)]) -> Vec<u8> {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (kind, value) in subject {
            params.distinguished_name.push(kind.clone(), *value);
        }
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn the_subject_reads_as_java_writes_it_last_rdn_first() {
        let der = certificate(&[
            (rcgen::DnType::CountryName, "DE"),
            (rcgen::DnType::OrganizationName, "Example, Inc."),
            (rcgen::DnType::OrganizationalUnitName, "eng"),
            (rcgen::DnType::CommonName, "app-1"),
        ]);
        assert_eq!(
            subject_name(&der).unwrap(),
            "CN=app-1,OU=eng,O=Example\\, Inc.,C=DE"
        );
    }

    #[test]
    fn unknown_attribute_types_are_oids_with_the_der_value_in_hex() {
        let email = rcgen::DnType::CustomDnType(vec![1, 2, 840, 113549, 1, 9, 1]);
        let der = certificate(&[(rcgen::DnType::CommonName, "a"), (email, "a@b")]);
        let name = subject_name(&der).unwrap();
        assert!(name.starts_with("1.2.840.113549.1.9.1=#"), "{name}");
        assert!(name.ends_with(",CN=a"), "{name}");
    }

    #[test]
    fn values_are_escaped_as_rfc_2253_says() {
        assert_eq!(escape_value(" a+b;c "), "\\ a\\+b\\;c\\ ");
        assert_eq!(escape_value("#1"), "\\#1");
        assert_eq!(escape_value("a#1"), "a#1");
    }

    #[test]
    fn default_is_the_whole_subject() {
        let mapper = PrincipalMapper::parse("DEFAULT").unwrap();
        assert_eq!(mapper.map("CN=a,O=b").as_deref(), Some("CN=a,O=b"));
        let empty = PrincipalMapper::parse("").unwrap();
        assert_eq!(empty.map("CN=a").as_deref(), Some("CN=a"));
    }

    #[test]
    fn the_first_rule_whose_pattern_matches_the_whole_subject_applies() {
        let mapper = PrincipalMapper::parse(
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,\
             RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1@$2/L, DEFAULT",
        )
        .unwrap();
        assert_eq!(
            mapper.map("CN=kafka1,OU=ServiceUsers,O=Org").as_deref(),
            Some("kafka1")
        );
        assert_eq!(
            mapper.map("CN=Duke,OU=JavaSoft,O=Sun").as_deref(),
            Some("duke@javasoft")
        );
        assert_eq!(mapper.map("CN=x,C=DE").as_deref(), Some("CN=x,C=DE"));
    }

    #[test]
    fn without_default_an_unmatched_subject_has_no_principal() {
        let mapper = PrincipalMapper::parse("RULE:^CN=([^,]*),.*$/$1/U").unwrap();
        assert_eq!(mapper.map("CN=app,O=x").as_deref(), Some("APP"));
        assert_eq!(mapper.map("O=x"), None);
    }

    #[test]
    fn java_replacements_and_escaped_slashes_and_commas() {
        // `$1x` is group 1 then `x` in Java; `\/` and `\,` are the rule syntax's escapes.
        let mapper = PrincipalMapper::parse("RULE:^CN=(a\\/b)\\,.*$/$1x\\$/").unwrap();
        assert_eq!(mapper.map("CN=a/b,O=c").as_deref(), Some("a/bx$"));
    }

    #[test]
    fn malformed_rules_are_refused() {
        for text in ["RULE:abc", "RULE:a/b/X", "NOPE", "RULE:(/x/"] {
            assert!(PrincipalMapper::parse(text).is_err(), "{text}");
        }
    }
}
