//! What a task file asks of this site, resolved before its flags are parsed: `use_spot: true`
//! becomes the preemptible partition and/or QOS the config names (`spot_partition`,
//! `spot_qos`), and `infra: slurm/CLUSTER` is checked against this cluster's name.

use crate::launch::config::{FileDefaults, Sources, layered};
use crate::launch::task_file::{Given, Refusal, Value};
use crate::printer::Printer;
use crate::slurm::query;

/// The config's preemptible partition and QOS.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Spot {
    pub(super) partition: Option<String>,
    pub(super) qos: Option<String>,
}

impl Spot {
    /// From the config files (the project file over the user file), read quietly: the launch
    /// reads them again, and says what it has to say then.
    pub(super) fn from_config() -> Result<Self, Refusal> {
        let sources = Sources::load(&Printer::new(true), Vec::new())
            .map_err(|e| Refusal::new("resources.use_spot", 0, e.to_string()))?;
        Ok(Self::of(&sources.project, &sources.user))
    }

    fn of(project: &FileDefaults, user: &FileDefaults) -> Self {
        Self {
            partition: layered(None, &project.spot_partition, &user.spot_partition),
            qos: layered(None, &project.spot_qos, &user.spot_qos),
        }
    }

    /// `use_spot: true` (at `given`'s field and line) as the flags of the site's preemptible
    /// partition and QOS; refused, naming the keys, where the config names neither, and where
    /// the file's `infra` names another partition (`infra`).
    pub(super) fn flags(
        &self,
        given: &Given,
        infra: Option<&Given>,
    ) -> Result<Vec<Given>, Refusal> {
        if let (Some(spot), Some(infra)) = (&self.partition, infra)
            && infra.value != Value::Values(vec![spot.clone()])
        {
            return Err(Refusal::new(
                &given.field,
                given.line,
                format!(
                    "runs in the site's spot partition `{spot}` (`spot_partition`), but `infra` (line {}) names another: keep one of them",
                    infra.line
                ),
            ));
        }
        let mut flags = Vec::new();
        for (long, value) in [("partition", &self.partition), ("qos", &self.qos)] {
            if let Some(value) = value {
                flags.push(Given::one(&given.field, given.line, long, value.clone()));
            }
        }
        if flags.is_empty() {
            return Err(Refusal::new(
                &given.field,
                given.line,
                "this site's config names no preemptible partition or QOS for it: set `spot_partition = \"NAME\"` and/or `spot_qos = \"NAME\"` under `[launch]` in your config file (~/.config/rayslurm/config.toml) or the project's rayslurm.toml (docs/options.md), or ask for one here with `rayslurm: {partition: NAME, requeue: true}`",
            ));
        }
        Ok(flags)
    }
}

/// `infra: slurm/CLUSTER`: refused unless CLUSTER is this cluster (Slurm's `ClusterName`).
pub(super) fn check_cluster(given: &Given, named: &str) -> Result<(), Refusal> {
    let refuse = |why: String| Refusal::new(&given.field, given.line, why);
    let this = query::cluster_name().map_err(|e| {
        refuse(format!(
            "names the Slurm cluster `{named}`, and which cluster this is cannot be told ({e}): write `infra: slurm` to run on the cluster of this login node"
        ))
    })?;
    if this.eq_ignore_ascii_case(named) {
        return Ok(());
    }
    Err(refuse(format!(
        "names the Slurm cluster `{named}`, but this is `{this}`: rayslurm submits to the cluster of the login node it runs on; run it on {named}'s, or write `infra: slurm/{this}` (or `slurm`)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The project file's keys over the user file's; neither: refused, naming both keys.
    #[test]
    fn use_spot_takes_the_configs_partition_and_qos_or_names_the_keys() {
        let file = |p: Option<&str>, q: Option<&str>| FileDefaults {
            spot_partition: p.map(str::to_owned),
            spot_qos: q.map(str::to_owned),
            ..FileDefaults::default()
        };
        let given = Given::switch("resources.use_spot", 4, "use-spot");
        let longs = |spot: Spot| {
            spot.flags(&given, None)
                .map(|f| {
                    f.iter()
                        .map(|g| format!("{}={:?}", g.long, g.value))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .map_err(|r| r.why)
        };
        let spot = Spot::of(
            &file(Some("labspot"), None),
            &file(Some("other"), Some("low")),
        );
        assert_eq!(
            longs(spot).unwrap(),
            "partition=Values([\"labspot\"]) qos=Values([\"low\"])"
        );
        let why = longs(Spot::of(&file(None, None), &file(None, None))).unwrap_err();
        assert!(
            why.contains("spot_partition") && why.contains("spot_qos"),
            "{why}"
        );
        // A partition of the file's `infra` other than the spot one is a contradiction.
        let spot = Spot::of(&file(Some("labspot"), None), &FileDefaults::default());
        let infra = Given::one("resources.infra", 5, "partition", "lab");
        let why = spot.flags(&given, Some(&infra)).unwrap_err().why;
        assert!(why.contains("`labspot`") && why.contains("line 5"), "{why}");
        let same = Given::one("resources.infra", 5, "partition", "labspot");
        assert!(spot.flags(&given, Some(&same)).is_ok());
    }
}
