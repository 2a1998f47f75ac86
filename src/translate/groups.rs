//! Which consumer groups to translate: exact ids, full-match regular expressions, or all.

use std::collections::HashSet;

use regex::Regex;

/// A selection of consumer groups.
///
/// Regular expressions match the WHOLE group id, as Java's `Pattern.matcher(id).matches()`
/// (KIP-1239), not a substring. They use the Rust `regex` syntax, which covers the common
/// subset of Java's (no backreferences or look-around).
///
/// ```
/// use mm2_offsets::translate::GroupSelector;
///
/// let selector = GroupSelector::new(["orders-app"], ["billing-.*"]).unwrap();
/// assert!(selector.matches("orders-app"));
/// assert!(selector.matches("billing-eu"));
/// assert!(!selector.matches("xbilling-eu"));
/// assert!(GroupSelector::all().matches("anything"));
/// ```
#[derive(Clone, Debug)]
pub struct GroupSelector {
    all: bool,
    ids: HashSet<String>,
    patterns: Vec<Regex>,
}

/// A group regex that does not compile.
#[derive(Debug, thiserror::Error)]
#[error("invalid group regex {pattern:?}: {source}")]
pub struct InvalidGroupPattern {
    /// The regex as given.
    pub pattern: String,
    /// Why it does not compile.
    pub source: regex::Error,
}

impl GroupSelector {
    /// Every group.
    pub fn all() -> Self {
        GroupSelector {
            all: true,
            ids: HashSet::new(),
            patterns: Vec::new(),
        }
    }

    /// Groups whose id is one of `ids` or fully matches one of `patterns`.
    pub fn new<I, S, P, T>(ids: I, patterns: P) -> Result<Self, InvalidGroupPattern>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
        P: IntoIterator<Item = T>,
        T: AsRef<str>,
    {
        let patterns = patterns
            .into_iter()
            .map(|p| {
                let p = p.as_ref();
                // Anchoring both ends turns "find" into Java's full match.
                Regex::new(&format!("^(?:{p})$")).map_err(|source| InvalidGroupPattern {
                    pattern: p.to_string(),
                    source,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(GroupSelector {
            all: false,
            ids: ids.into_iter().map(Into::into).collect(),
            patterns,
        })
    }

    /// Whether this selects every group.
    pub fn is_all(&self) -> bool {
        self.all
    }

    /// The exact ids requested.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.ids.iter().map(String::as_str)
    }

    /// Whether `group` is selected.
    pub fn matches(&self, group: &str) -> bool {
        self.all || self.ids.contains(group) || self.patterns.iter().any(|p| p.is_match(group))
    }
}
