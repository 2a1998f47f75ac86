//! The `select` layer: which consumer groups to translate, apply or watch: exact ids, Java
//! patterns that match whole ids (Java's own syntax and semantics, KIP-1239), or all.

mod java_pattern;

use std::collections::HashSet;

pub use java_pattern::{Construct, JavaPattern, Refusal, RefusalKind};

/// A selection of consumer groups.
///
/// Patterns have the meaning of Java's `Pattern.matcher(id).matches()` (KIP-1239): the whole
/// group id must match, with Java's syntax and semantics, or the pattern is refused (see
/// [`JavaPattern`]).
///
/// ```
/// use mm2_offsets::select::GroupSelector;
///
/// let selector = GroupSelector::new(["orders-app"], ["billing-.*"]).unwrap();
/// assert!(GroupSelector::new([], ["billing-.*"]).unwrap().matches("billing-eu"));
/// assert!(selector.matches("orders-app"));
/// assert!(selector.matches("billing-eu"));
/// assert!(!selector.matches("xbilling-eu"));
/// assert!(GroupSelector::patterns(["app-(?i)EU"]).unwrap().matches("app-eu"));
/// assert!(GroupSelector::ids(["orders-app"]).matches("orders-app"));
/// assert!(GroupSelector::all().matches("anything"));
/// ```
#[derive(Clone, Debug)]
pub struct GroupSelector {
    all: bool,
    ids: HashSet<String>,
    patterns: Vec<JavaPattern>,
}

/// A group pattern that Java rejects, or that we refuse because we cannot match it exactly as
/// Java does.
#[derive(Debug, thiserror::Error)]
#[error("group pattern {pattern:?}: {refusal}")]
#[non_exhaustive]
pub struct InvalidGroupPattern {
    /// The pattern as given.
    pub pattern: String,
    /// What is wrong and where.
    pub refusal: Refusal,
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

    /// Exactly these group ids.
    pub fn ids<I, S>(ids: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        GroupSelector {
            all: false,
            ids: ids.into_iter().map(Into::into).collect(),
            patterns: Vec::new(),
        }
    }

    /// Groups whose whole id matches one of these Java patterns.
    pub fn patterns<P, T>(patterns: P) -> Result<Self, InvalidGroupPattern>
    where
        P: IntoIterator<Item = T>,
        T: AsRef<str>,
    {
        let patterns: Vec<T> = patterns.into_iter().collect();
        Self::new([], patterns.iter().map(AsRef::as_ref))
    }

    /// Groups whose id is one of `ids` or fully matches one of `patterns`. Both take `&str`
    /// items, so an empty list can be written `[]`: `GroupSelector::new([], ["billing-.*"])`.
    pub fn new<'a, 'b, I, P>(ids: I, patterns: P) -> Result<Self, InvalidGroupPattern>
    where
        I: IntoIterator<Item = &'a str>,
        P: IntoIterator<Item = &'b str>,
    {
        let patterns = patterns
            .into_iter()
            .map(|p| {
                JavaPattern::new(p).map_err(|refusal| InvalidGroupPattern {
                    pattern: p.to_string(),
                    refusal,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut selector = Self::ids(ids.into_iter().map(str::to_string));
        selector.patterns = patterns;
        Ok(selector)
    }

    /// Whether this selects every group.
    pub fn is_all(&self) -> bool {
        self.all
    }

    /// The exact ids requested.
    pub fn ids_requested(&self) -> impl Iterator<Item = &str> {
        self.ids.iter().map(String::as_str)
    }

    /// Whether `group` is selected.
    pub fn matches(&self, group: &str) -> bool {
        self.all || self.ids.contains(group) || self.patterns.iter().any(|p| p.matches(group))
    }
}
