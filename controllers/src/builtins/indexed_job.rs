//! The completion indexes of Indexed Jobs (`completionMode: Indexed`), as kube-controller-manager's
//! `pkg/controller/job/indexed_job_utils.go`: which index a Pod holds, sets of indexes in the
//! compressed interval form of `status.completedIndexes` ("0-2,4"), the lowest indexes still
//! to run, the Pods to delete for repeated or invalid indexes, and the Pod of one index.
//!
//! A Pod's index is its [`COMPLETION_INDEX`] annotation (a non-negative integer); a Pod without
//! one, or with one that does not parse, holds no index (upstream's `unknownCompletionIndex`).

use std::collections::BTreeSet;
use std::fmt;

use k8s_openapi::api::core::v1::{Container, EnvVar, EnvVarSource, ObjectFieldSelector, Pod};

use super::pod_state;

/// The annotation, and the label, that hold a Pod's completion index
/// (`batch.JobCompletionIndexAnnotation`).
pub const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
/// The environment variable every container of an Indexed Job's Pod gets its index in.
pub const COMPLETION_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
/// The annotation that tells how many Pods of its index failed before a Pod
/// (`batch.JobIndexFailureCountAnnotation`), set on every Pod of a Job with
/// `backoffLimitPerIndex`.
pub const FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-failure-count";
/// The annotation that tells how many failures of its index a pod failure policy's `Ignore` rule
/// passed over (`batch.JobIndexIgnoredFailureCountAnnotation`); set only when not zero.
pub const IGNORED_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-ignored-failure-count";
/// The longest `generateName` prefix (apimachinery's `maxGeneratedNameLength`).
const GENERATE_NAME_PREFIX_MAX: usize = 58;

/// A set of indexes as ordered, disjoint, non-adjacent closed intervals (upstream's
/// `orderedIntervals`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Intervals(Vec<(i32, i32)>);

impl Intervals {
    /// Parse `status.completedIndexes` (or `failedIndexes`) as upstream's
    /// `parseIndexesFromString`: intervals that do not parse are skipped, and indexes at or above
    /// `completions` are dropped.
    pub fn parse(text: &str, completions: i32) -> Intervals {
        let mut result: Vec<(i32, i32)> = Vec::new();
        if text.is_empty() {
            return Intervals(result);
        }
        for interval in text.split(',') {
            let mut limits = interval.split('-');
            let Some(Ok(first)) = limits.next().map(str::parse::<i32>) else { continue };
            if first >= completions {
                break;
            }
            let last = match limits.next() {
                Some(last) => match last.parse::<i32>() {
                    Ok(last) => last.min(completions - 1),
                    Err(_) => continue,
                },
                None => first,
            };
            match result.last_mut() {
                Some(previous) if previous.1 == first - 1 => previous.1 = last,
                _ => result.push((first, last)),
            }
        }
        Intervals(result)
    }

    /// These intervals with `indexes` added (upstream's `withOrderedIndexes`).
    pub fn with_indexes(&self, indexes: impl IntoIterator<Item = i32>) -> Intervals {
        let sorted: BTreeSet<i32> = indexes.into_iter().collect();
        self.merge(&Intervals(sorted.into_iter().map(|i| (i, i)).collect()))
    }

    /// The union of both (upstream's `merge`).
    pub fn merge(&self, other: &Intervals) -> Intervals {
        let mut all: Vec<(i32, i32)> = self.0.iter().chain(&other.0).copied().collect();
        all.sort_unstable();
        let mut result: Vec<(i32, i32)> = Vec::with_capacity(all.len());
        for (first, last) in all {
            match result.last_mut() {
                Some(previous) if first <= previous.1.saturating_add(1) => previous.1 = previous.1.max(last),
                _ => result.push((first, last)),
            }
        }
        Intervals(result)
    }

    /// How many indexes the intervals hold.
    pub fn total(&self) -> i32 {
        self.0.iter().map(|(first, last)| last - first + 1).sum()
    }

    /// Whether no index is in the intervals.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many of `other`'s indexes are also in these intervals.
    pub fn overlap(&self, other: &Intervals) -> i32 {
        let pairs = self.0.iter().flat_map(|a| other.0.iter().map(move |b| (a, b)));
        pairs.map(|((f1, l1), (f2, l2))| ((*l1).min(*l2) - (*f1).max(*f2) + 1).max(0)).sum()
    }

    /// Whether `index` is in one of the intervals.
    pub fn has(&self, index: i32) -> bool {
        self.0.iter().any(|(first, last)| (*first..=*last).contains(&index))
    }

    /// The intervals, lowest first.
    pub fn iter(&self) -> impl Iterator<Item = (i32, i32)> + '_ {
        self.0.iter().copied()
    }
}

/// The compressed form: `"1,3-5,7,8"` (two adjacent indexes are written as a pair, not a range).
impl fmt::Display for Intervals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (first, last)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{first}")?;
            if last == &(first + 1) {
                write!(f, ",{last}")?;
            } else if last > first {
                write!(f, "-{last}")?;
            }
        }
        Ok(())
    }
}

/// The Pod's completion index (upstream's `getCompletionIndex`): `None` without the annotation,
/// or when it is not a non-negative integer.
pub fn completion_index(pod: &Pod) -> Option<i32> {
    let value = pod.metadata.annotations.as_ref()?.get(COMPLETION_INDEX)?;
    value.parse::<i32>().ok().filter(|i| *i >= 0)
}

/// Whether the Pod holds an index below `completions` (upstream counts only those).
pub fn has_valid_index(pod: &Pod, completions: i32) -> bool {
    completion_index(pod).is_some_and(|i| i < completions)
}

/// The indexes of Pods of phase Succeeded below `completions`, added to those `previous`
/// (`status.completedIndexes`) records (upstream's `calculateSucceededIndexes`): an index once
/// completed stays so even if its Pod goes away.
pub fn succeeded_indexes<'a>(
    previous: Option<&str>,
    pods: impl IntoIterator<Item = &'a Pod>,
    completions: i32,
) -> Intervals {
    let succeeded = pods
        .into_iter()
        .filter(|p| pod_state::phase(p) == pod_state::PHASE_SUCCEEDED)
        .filter_map(completion_index)
        .filter(|i| *i < completions);
    Intervals::parse(previous.unwrap_or_default(), completions).with_indexes(succeeded)
}

/// Up to `count` indexes below `completions`, lowest first, that neither an active Pod holds nor
/// `done` covers (upstream's `firstPendingIndexes`).
pub fn first_pending(active: &[&Pod], done: &Intervals, count: usize, completions: i32) -> Vec<i32> {
    let busy = done.with_indexes(active.iter().filter_map(|p| completion_index(p)));
    let mut result = Vec::with_capacity(count.min(usize::try_from(completions).unwrap_or(0)));
    let mut candidate = 0;
    for (first, last) in busy.iter() {
        while candidate < completions && result.len() < count && candidate < first {
            result.push(candidate);
            candidate += 1;
        }
        candidate = candidate.max(last.saturating_add(1));
    }
    while candidate < completions && result.len() < count {
        result.push(candidate);
        candidate += 1;
    }
    result
}

/// The active Pods to delete (upstream's `activePodsForRemoval` for an Indexed Job): every Pod
/// without an index or with one at or above `completions`, all but one of the Pods that share an
/// index (the one kept is the last in [`pod_state::deletion_order`], the furthest along), and then,
/// if that is fewer than `at_least`, the first of the others in deletion order.
pub fn pods_for_removal<'a>(active: &[&'a Pod], completions: i32, at_least: usize) -> Vec<&'a Pod> {
    let mut by_index: Vec<(Option<i32>, &'a Pod)> =
        active.iter().map(|p| (completion_index(p), *p)).collect();
    by_index.sort_by(|(a, pa), (b, pb)| a.cmp(b).then_with(|| pod_state::deletion_order(pa, pb)));
    let mut remove = Vec::new();
    let mut left = Vec::new();
    for (i, (index, pod)) in by_index.iter().enumerate() {
        let valid = index.is_some_and(|ix| ix < completions);
        let last_of_index = by_index.get(i + 1).is_none_or(|(next, _)| next != index);
        if valid && last_of_index {
            left.push(*pod);
        } else {
            remove.push(*pod);
        }
    }
    if remove.len() < at_least {
        left.sort_by(|a, b| pod_state::deletion_order(a, b));
        remove.extend(left.into_iter().take(at_least - remove.len()));
    }
    remove
}

/// The `generateName` of an index's Pods, `<job>-<index>-`, the Job's name cut so that it fits
/// (upstream's `podGenerateNameWithIndex`).
pub fn generate_name(job_name: &str, index: i32) -> String {
    let suffix = format!("-{index}-");
    let mut prefix = format!("{job_name}{suffix}");
    if prefix.len() > GENERATE_NAME_PREFIX_MAX {
        let mut keep = GENERATE_NAME_PREFIX_MAX.saturating_sub(suffix.len());
        while !job_name.is_char_boundary(keep) {
            keep -= 1;
        }
        prefix = format!("{}{suffix}", &job_name[..keep]);
    }
    prefix
}

/// Make `pod` (made from the Job's template) the Pod of `index`, as upstream's `manageJob`
/// does: the index as annotation and label, `spec.hostname` `<job>-<index>`, and
/// [`COMPLETION_INDEX_ENV`] in every container and init container from the label through the
/// downward API (`addCompletionIndexEnvVariables`, with the `PodIndexLabel` gate on, as it is
/// locked since Kubernetes 1.32) unless the container sets it already.
pub fn set_index(pod: &mut Pod, job_name: &str, index: i32) {
    let value = index.to_string();
    let meta = &mut pod.metadata;
    meta.annotations.get_or_insert_default().insert(COMPLETION_INDEX.to_owned(), value.clone());
    meta.labels.get_or_insert_default().insert(COMPLETION_INDEX.to_owned(), value);
    let spec = pod.spec.get_or_insert_default();
    spec.hostname = Some(format!("{job_name}-{index}"));
    let init = spec.init_containers.iter_mut().flatten();
    for container in init.chain(spec.containers.iter_mut()) {
        add_index_env(container);
    }
}

fn add_index_env(container: &mut Container) {
    let env = container.env.get_or_insert_default();
    if env.iter().any(|v| v.name == COMPLETION_INDEX_ENV) {
        return;
    }
    env.push(EnvVar {
        name: COMPLETION_INDEX_ENV.to_owned(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                api_version: None,
                field_path: format!("metadata.labels['{COMPLETION_INDEX}']"),
            }),
            ..EnvVarSource::default()
        }),
    });
}

/// The value of the count annotation `key` on `pod` (upstream's `parseInt32`): 0 when missing,
/// unparsable, negative or beyond `i32`.
pub fn count_annotation(pod: &Pod, key: &str) -> i32 {
    let value = pod.metadata.annotations.as_ref().and_then(|a| a.get(key));
    value
        .and_then(|v| v.parse::<i64>().ok())
        .and_then(|v| i32::try_from(v).ok())
        .filter(|v| *v >= 0)
        .unwrap_or(0)
}

/// The failures of its index before `pod`, counted and ignored (`getIndexAbsoluteFailureCount`).
pub fn absolute_failure_count(pod: &Pod) -> i32 {
    count_annotation(pod, FAILURE_COUNT).saturating_add(count_annotation(pod, IGNORED_FAILURE_COUNT))
}

/// The failures of its index a Pod's replacement carries (`getNewIndexFailureCounts`): the
/// failed Pod's counts, with its own failure added to the counted ones, or to the ignored ones
/// when a pod failure policy's `Ignore` rule matched it (`ignored`). `None` (no failed Pod):
/// both 0.
pub fn replacement_failure_counts(replaced: Option<(&Pod, bool)>) -> (i32, i32) {
    let Some((pod, ignored)) = replaced else { return (0, 0) };
    let (counted, passed) =
        (count_annotation(pod, FAILURE_COUNT), count_annotation(pod, IGNORED_FAILURE_COUNT));
    if ignored { (counted, passed.saturating_add(1)) } else { (counted.saturating_add(1), passed) }
}

/// Mark `pod` as the Pod after `counted` failures of its index, `ignored` of them passed over
/// (`addIndexFailureCountAnnotation`).
pub fn set_failure_counts(pod: &mut Pod, (counted, ignored): (i32, i32)) {
    let annotations = pod.metadata.annotations.get_or_insert_default();
    annotations.insert(FAILURE_COUNT.to_owned(), counted.to_string());
    if ignored > 0 {
        annotations.insert(IGNORED_FAILURE_COUNT.to_owned(), ignored.to_string());
    }
}

/// The first rule of an Indexed Job's success policy that its completed indexes `done` satisfy,
/// as upstream's `matchSuccessPolicy`: `Matched rules at index <i>`. A rule with
/// `succeededIndexes` (parsed as `completedIndexes`; a rule that parses to nothing is skipped)
/// needs all of them completed, or `succeededCount` of them; a rule with only `succeededCount`
/// needs that many completed indexes. Nothing matches while no index completed.
pub fn success_policy_match(
    policy: &k8s_openapi::api::batch::v1::SuccessPolicy,
    completions: i32,
    done: &Intervals,
) -> Option<String> {
    if done.is_empty() {
        return None;
    }
    let matched =
        policy.rules.iter().position(|rule| match (&rule.succeeded_indexes, rule.succeeded_count) {
            (Some(indexes), count) => {
                let required = Intervals::parse(indexes, completions);
                let contained = required.overlap(done);
                !required.is_empty()
                    && (contained == required.total() || count.is_some_and(|c| contained >= c))
            }
            (None, Some(count)) => done.total() >= count,
            (None, None) => false,
        });
    matched.map(|index| format!("Matched rules at index {index}"))
}
