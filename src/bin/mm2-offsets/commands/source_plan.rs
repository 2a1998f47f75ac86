//! A saved `apply` plan made from the source's committed offsets (`--precise
//! --from-source-offsets`): what it was made with is saved beside it (`"source_offsets"`), and
//! `apply --plan` translates the plan's groups from the source again with exactly that, so that
//! each row is checked against a fresh translation (`PlanInput::SourceOffsets`), as failback
//! derives its rows from the backup again. MirrorMaker 2 checkpoints no Streams or share group
//! (and not every consumer group), so a checkpoint cannot vouch for such a row.

use mm2_offsets::apply::ApplyPlan;
use mm2_offsets::client::Deadline;
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::{MirrorClient, Translation};
use serde::{Deserialize, Serialize};

use crate::args::TranslateArgs;
use crate::session;

/// How a source-offsets plan was translated, saved in the plan file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SourceBinding {
    /// Whether the rows were matched with the records (`--match-records`).
    pub(crate) match_records: bool,
    /// Whether upstream offsets were interpolated (`--gapless-upstream`).
    pub(crate) gapless_upstream: bool,
    /// The offset-syncs topic named with `--syncs-topic`; `None`: found on the offset-syncs
    /// cluster, as when planned.
    pub(crate) syncs_topic: Option<String>,
}

impl SourceBinding {
    /// What `args` translate with.
    pub(crate) fn of(args: &TranslateArgs) -> Self {
        SourceBinding {
            match_records: args.precise.match_records,
            gapless_upstream: args.precise.gapless_upstream,
            syncs_topic: args.precise.syncs.syncs_topic.clone(),
        }
    }
}

/// The plan file's JSON: the plan, and with `binding` its `"source_offsets"` member.
pub(crate) fn document(
    plan: &ApplyPlan,
    binding: Option<&SourceBinding>,
) -> Result<serde_json::Value, String> {
    let mut doc = serde_json::to_value(plan).map_err(|e| e.to_string())?;
    if let Some(binding) = binding {
        doc["source_offsets"] = serde_json::to_value(binding).map_err(|e| e.to_string())?;
    }
    Ok(doc)
}

/// The binding saved in a plan file's text, if any (`Err`: present but not one).
pub(crate) fn saved_binding(text: &str) -> Result<Option<SourceBinding>, String> {
    #[derive(Deserialize)]
    struct Saved {
        #[serde(default)]
        source_offsets: Option<SourceBinding>,
    }
    serde_json::from_str::<Saved>(text)
        .map(|saved| saved.source_offsets)
        .map_err(|e| format!("its \"source_offsets\" member: {e}"))
}

/// Whether the run names the source cluster to translate from (`--source-bootstrap-server` or
/// `--source-command-config`; beside `--plan`, the offset-syncs flags alone are refused).
pub(crate) fn names_a_source(args: &TranslateArgs) -> bool {
    args.precise.syncs.names_source_cluster()
}

/// The plan's groups translated from the source's offsets again, as `binding` says, with the
/// run's connections: the client of the target and the translation each row is checked
/// against.
pub(crate) async fn translate_again(
    args: &TranslateArgs,
    plan: &ApplyPlan,
    binding: &SourceBinding,
    budget: &Deadline,
    commits: Option<usize>,
) -> Result<(MirrorClient, Translation), String> {
    let mut again = args.clone();
    again.sources = plan.sources.clone();
    let p = &mut again.precise;
    p.precise = true;
    p.from_source_offsets = true;
    p.match_records = binding.match_records;
    p.gapless_upstream = binding.gapless_upstream;
    if binding.syncs_topic.is_some() {
        p.syncs.syncs_topic = binding.syncs_topic.clone();
    }
    let ids: Vec<&str> = plan.groups.iter().map(|g| g.group.as_str()).collect();
    let selector =
        GroupSelector::new(ids, std::iter::empty::<&str>()).map_err(|e| e.to_string())?;
    let (mirror, translation, _) =
        session::precise::read_for_apply(&again, selector, budget, commits).await?;
    Ok((mirror, translation))
}
