//! The parsed pattern, before it becomes a `regex-syntax` `Hir`.
//!
//! One small step between the two exists for `$`: Java's `$` also matches before a final line
//! terminator, which no `Hir` assertion expresses. Under `matches()` it is the same as the end of
//! the input when nothing that can consume a character follows it, and only then do we accept
//! it; that needs to know what follows, which the tree tells.

use regex_syntax::hir::{ClassUnicode, Hir, Look, Repetition};

use super::refusal::{Construct, Refusal};

#[derive(Debug)]
pub(super) enum Node {
    Empty,
    Set(ClassUnicode),
    /// `^` (without `MULTILINE`) and `\A`.
    Start,
    /// `\z`.
    End,
    /// `$` and `\Z`, at `position` in the user's pattern.
    Dollar {
        position: usize,
    },
    Concat(Vec<Node>),
    Alternation(Vec<Node>),
    /// Greedy and lazy repetitions select the same ids under a whole-input match, so the
    /// difference is not kept.
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
}

impl Node {
    /// Whether this node can only ever match the empty string.
    fn consumes_nothing(&self) -> bool {
        match self {
            Node::Empty | Node::Start | Node::End | Node::Dollar { .. } => true,
            Node::Set(_) => false,
            Node::Concat(nodes) | Node::Alternation(nodes) => {
                nodes.iter().all(Node::consumes_nothing)
            }
            Node::Repeat { node, max, .. } => *max == Some(0) || node.consumes_nothing(),
        }
    }

    /// The `Hir`; `at_end` says whether everything after this node in the whole pattern
    /// consumes nothing.
    pub(super) fn into_hir(self, at_end: bool) -> Result<Hir, Refusal> {
        Ok(match self {
            Node::Empty => Hir::empty(),
            Node::Set(set) => Hir::class(regex_syntax::hir::Class::Unicode(set)),
            Node::Start => Hir::look(Look::Start),
            Node::End => Hir::look(Look::End),
            Node::Dollar { position } => {
                if !at_end {
                    return Err(Refusal::unsupported(position, Construct::DollarBeforeInput));
                }
                Hir::look(Look::End)
            }
            Node::Concat(nodes) => {
                // Item i is at the end when every later item consumes nothing.
                let mut tail_empty = vec![at_end; nodes.len()];
                let mut rest_empty = at_end;
                for (i, node) in nodes.iter().enumerate().rev() {
                    tail_empty[i] = rest_empty;
                    rest_empty = rest_empty && node.consumes_nothing();
                }
                let hirs = nodes
                    .into_iter()
                    .zip(tail_empty)
                    .map(|(node, at_end)| node.into_hir(at_end))
                    .collect::<Result<Vec<_>, _>>()?;
                Hir::concat(hirs)
            }
            Node::Alternation(nodes) => Hir::alternation(
                nodes
                    .into_iter()
                    .map(|node| node.into_hir(at_end))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            Node::Repeat { node, min, max } => {
                // A second iteration follows the first, so inside a repetition that may run
                // more than once, the end is reached only if the body consumes nothing.
                let inner_at_end =
                    at_end && (max.is_some_and(|m| m <= 1) || node.consumes_nothing());
                Hir::repetition(Repetition {
                    min,
                    max,
                    greedy: true,
                    sub: Box::new(node.into_hir(inner_at_end)?),
                })
            }
        })
    }
}
