//! A task file's YAML as a tree whose every value and key knows its line: what the refusals
//! (`FILE:LINE: FIELD: why`) and the mapping to flags read. serde-saphyr's `Spanned` gives the
//! lines; this tree only keeps them.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::{DefaultMessageFormatter, Localizer, Location, SnippetMode, Spanned};

/// One YAML value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Line<Node>>),
    Map(Vec<(Line<String>, Line<Node>)>),
}

/// A value and the line (1-based) it starts on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Line<T> {
    pub(crate) value: T,
    pub(crate) line: u32,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Line<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let spanned = Spanned::<T>::deserialize(d)?;
        Ok(Self {
            line: u32::try_from(spanned.referenced.line()).unwrap_or(0),
            value: spanned.value,
        })
    }
}

impl Node {
    /// The value as text, for a scalar (a number or bool written as YAML shows it).
    pub(crate) fn scalar_text(&self) -> Option<String> {
        match self {
            Self::Bool(b) => Some(b.to_string()),
            Self::Int(i) => Some(i.to_string()),
            Self::Float(f) => Some(f.to_string()),
            Self::Str(s) => Some(s.clone()),
            Self::Null | Self::Seq(_) | Self::Map(_) => None,
        }
    }

    /// What the value is, for messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Null => "empty",
            Self::Bool(_) => "a boolean",
            Self::Int(_) | Self::Float(_) => "a number",
            Self::Str(_) => "text",
            Self::Seq(_) => "a list",
            Self::Map(_) => "a mapping",
        }
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        i64::try_from(v)
            .map(Node::Int)
            .or(Ok(Node::Float(v as f64)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Str(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Node, E> {
        Ok(Node::Str(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        Node::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Line<Node>>()? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Line<KeyText>>()? {
            let value = map.next_value::<Line<Node>>()?;
            let key = Line {
                value: key.value.0,
                line: key.line,
            };
            entries.push((key, value));
        }
        Ok(Node::Map(entries))
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

/// A mapping's key as text (`8: x` has the key `8`).
struct KeyText(String);

impl<'de> Deserialize<'de> for KeyText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let node = Node::deserialize(d)?;
        node.scalar_text()
            .map(KeyText)
            .ok_or_else(|| de::Error::custom(format!("a key is {}, not text", node.kind())))
    }
}

/// Why a task file is not valid YAML, and where the parser stopped (1-based; 0 where it did not
/// say).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub(crate) message: String,
    pub(crate) line: u32,
    pub(crate) column: u32,
}

impl SyntaxError {
    /// The parser's message without the place (`FILE:LINE:COLUMN:` gives that) and without
    /// its snippet of the file, on one line.
    fn of(err: &serde_saphyr::Error) -> Self {
        let (line, column) = err
            .location()
            .map_or((0, 0), |l| (to_u32(l.line()), to_u32(l.column())));
        let formatter = DefaultMessageFormatter.with_localizer(&NoPlace);
        let message = err.render_with_options(serde_saphyr::render_options! {
            formatter: &formatter,
            snippets: SnippetMode::Off,
        });
        // A duplicate key's message ends in advice to the library's caller, not to the user.
        let message = message
            .split(", set DuplicateKeyPolicy")
            .next()
            .unwrap_or_default();
        let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
        Self {
            message,
            line,
            column,
        }
    }
}

fn to_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(0)
}

/// English messages, without serde-saphyr's ` at line L, column C`: the refusal names the place
/// the way every other refusal does.
struct NoPlace;

impl Localizer for NoPlace {
    fn attach_location<'a>(&self, base: Cow<'a, str>, _: Location) -> Cow<'a, str> {
        base
    }
}

/// Parses a whole task file, by YAML 1.2's core schema as SkyPilot's files are written: only
/// `true` and `false` are booleans, so that `N`, `Y`, `ON` and `NO` stay what they say (keys of
/// `envs` among them), where YAML 1.1 would read them as `false` and `true`. Each YAML document
/// is one value: SkyPilot's pipelines are several, separated by `---`; empty ones are skipped.
pub(crate) fn parse_all(text: &str) -> Result<Vec<Line<Node>>, SyntaxError> {
    let yaml_12 = serde_saphyr::options! { strict_booleans: true };
    serde_saphyr::from_multiple_with_options::<Line<Node>>(text, yaml_12)
        .map_err(|e| SyntaxError::of(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_keep_their_lines() {
        let text = "name: x\n\nresources:\n  accelerators: A100:8\n  cpus: 4\nsetup: |\n  echo hi\nenvs:\n  A: 1\n";
        let Node::Map(top) = parse_all(text).unwrap().remove(0).value else {
            panic!("a map")
        };
        let lines: Vec<(&str, u32)> = top
            .iter()
            .map(|(k, _)| (k.value.as_str(), k.line))
            .collect();
        assert_eq!(
            lines,
            [("name", 1), ("resources", 3), ("setup", 6), ("envs", 8)]
        );
        let Node::Map(res) = &top[1].1.value else {
            panic!("resources")
        };
        assert_eq!(res[1].0.line, 5);
        assert_eq!(res[1].1.value, Node::Int(4));
        assert_eq!(top[2].1.value, Node::Str("echo hi\n".into()));
        assert_eq!(res[0].1.value, Node::Str("A100:8".into()));
    }

    /// YAML 1.1 would read these keys as `false`, `true`, `true`, `false` (and `NO` and `N`
    /// would then collide); SkyPilot's `envs` are written as YAML 1.2 reads them.
    #[test]
    fn only_true_and_false_are_booleans() {
        let text = "N: 8\nY: yes\nON: on\nNO: no\nT: true\nF: false\n";
        let Node::Map(top) = parse_all(text).unwrap().remove(0).value else {
            panic!("a map")
        };
        let read: Vec<(&str, &Node)> = top
            .iter()
            .map(|(k, v)| (k.value.as_str(), &v.value))
            .collect();
        assert_eq!(
            read,
            [
                ("N", &Node::Int(8)),
                ("Y", &Node::Str("yes".into())),
                ("ON", &Node::Str("on".into())),
                ("NO", &Node::Str("no".into())),
                ("T", &Node::Bool(true)),
                ("F", &Node::Bool(false)),
            ]
        );
    }

    #[test]
    fn bad_yaml_says_where() {
        let err = parse_all("name: x\nrun: [unclosed\n").unwrap_err();
        assert_eq!((err.line, err.column), (2, 6), "{err:?}");
        assert_eq!(err.message, "unclosed bracket '['");
        let err = parse_all("name: x\nrun: echo\n  bad: indent\n").unwrap_err();
        assert_eq!((err.line, err.column), (3, 6), "{err:?}");
        assert!(!err.message.contains("line"), "{err:?}");
        assert!(!err.message.contains('\n'), "{err:?}");
        let err = parse_all("a: 1\na: 2\n").unwrap_err();
        assert_eq!(
            (err.line, err.message.as_str()),
            (2, "duplicate mapping key: a")
        );
    }
}
