//! kube-apiserver's `PodSecurity` admission plugin (`plugin/pkg/admission/security/podsecurity`,
//! with the library `k8s.io/pod-security-admission`), on in every cluster since 1.25: the Pod
//! Security Standards a namespace asks for with its labels.
//!
//! - A namespace's labels `pod-security.kubernetes.io/<mode>` (`enforce`, `audit`, `warn`) name
//!   a level (`privileged`, `baseline`, `restricted`) and `<mode>-version` a version (`latest` or
//!   `v1.<minor>`); an absent label is `privileged` and `latest`, the plugin's default
//!   configuration (no exemptions). [`Policy::of`].
//! - A Pod created (or updated in a way that can change what it runs: a container added or
//!   removed, an image or a seccomp annotation changed) in a namespace whose `enforce` level it
//!   violates is 403 `pods "p" is forbidden: violates PodSecurity "restricted:latest":
//!   allowPrivilegeEscalation != false (container "app" must set
//!   securityContext.allowPrivilegeEscalation=false), ...`; an admitted Pod that violates the
//!   `warn` level earns the warning `would violate PodSecurity "restricted:latest": ...`.
//! - The Pod's controllers (ReplicationControllers, PodTemplates, ReplicaSets, Deployments,
//!   StatefulSets, DaemonSets, Jobs, CronJobs) are never refused, and earn the same warning for
//!   their template. A namespace that only enforces warns about nothing: the Deployment is
//!   created, and its ReplicaSet's Pods are refused (`FailedCreate`), as on a cluster.
//! - A namespace created with an invalid label, or updated to one, is 422 Invalid
//!   (`metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one
//!   of privileged, baseline, restricted`). An update that tightens `enforce` is admitted with a
//!   warning per kind of violation among the namespace's Pods (`existing pods in namespace "ns"
//!   violate the new PodSecurity enforce level "restricted:latest"`, then `web-1 (and 2 other
//!   pods): allowPrivilegeEscalation != false, unrestricted capabilities, ...`).
//! - The checks are those of Kubernetes 1.33 (the version the model serves), each in the
//!   revisions the policy versions select (`sysctls` grows at v1.27, v1.29 and v1.32, the
//!   restricted `seccompProfile` check starts at v1.19, `runAsUser` at v1.23, the Windows
//!   exemptions at v1.25...): `latest`, and any version past v1.32, evaluates the newest. Their
//!   results are listed in upstream's order (baseline checks by id, then restricted ones), in
//!   upstream's words.
//! - Audit annotations are not modelled (the model keeps no audit log).
//!
//! On with the Pod plugins ([`crate::ServerConfig::pod_admission_plugins`]), off by default as on
//! the server the conformance corpus was recorded on.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use kube_core::response::StatusCause;
use serde_json::{Map, Value};

use crate::errors::{self, go_quote};

/// The label prefix of the three modes.
pub const LABEL_PREFIX: &str = "pod-security.kubernetes.io/";

/// How strict a policy is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// No restriction.
    Privileged,
    /// Known privilege escalations forbidden.
    Baseline,
    /// Current Pod hardening practice.
    Restricted,
}

impl Level {
    /// `ParseLevel` without its fallback: `None` for anything but the three names.
    pub fn parse(text: &str) -> Option<Level> {
        match text {
            "privileged" => Some(Level::Privileged),
            "baseline" => Some(Level::Baseline),
            "restricted" => Some(Level::Restricted),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }
}

/// A policy version: `latest`, or `v1.<minor>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// The newest checks, whatever they are.
    Latest,
    /// The checks as they were at Kubernetes 1.`minor`.
    Minor(u64),
}

impl Version {
    /// `ParseVersion`: `latest`, or `v1.` and a minor without leading zeros.
    pub fn parse(text: &str) -> Option<Version> {
        if text == "latest" {
            return Some(Version::Latest);
        }
        let minor = text.strip_prefix("v1.")?;
        let digits = !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit());
        if !digits || (minor.len() > 1 && minor.starts_with('0')) {
            return None;
        }
        // Go's Atoi takes any int64.
        minor.parse::<i64>().ok().map(|m| Version::Minor(m.unsigned_abs()))
    }

    /// The minor whose checks apply: past the newest check revision (and `latest`), the newest.
    fn effective_minor(self) -> u64 {
        match self {
            Version::Latest => NEWEST_CHECKS,
            Version::Minor(m) => m.min(NEWEST_CHECKS),
        }
    }
}

/// The newest minor any check has a revision for (`sysctls` at v1.32) in Kubernetes 1.33.
const NEWEST_CHECKS: u64 = 32;

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Version::Latest => f.write_str("latest"),
            Version::Minor(m) => write!(f, "v1.{m}"),
        }
    }
}

/// A level at a version, as upstream prints it: `restricted:latest`, `baseline:v1.25`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelVersion {
    /// The level.
    pub level: Level,
    /// The version.
    pub version: Version,
}

impl fmt::Display for LevelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.level.name(), self.version)
    }
}

const PRIVILEGED_LATEST: LevelVersion = LevelVersion { level: Level::Privileged, version: Version::Latest };

/// A namespace's policy: what it enforces, audits and warns about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Pods that violate it are refused.
    pub enforce: LevelVersion,
    /// Violations are recorded in the audit log (not modelled).
    pub audit: LevelVersion,
    /// Violations earn a warning.
    pub warn: LevelVersion,
}

impl Policy {
    /// `PolicyToEvaluate`: the policy a namespace's labels ask for, over the default
    /// (`privileged:latest` for every mode), and the labels' errors, in upstream's order. An
    /// invalid level enforces `restricted` and audits and warns at `privileged`; an invalid
    /// version is `latest`.
    pub fn of(labels: Option<&BTreeMap<String, String>>) -> (Policy, Vec<StatusCause>) {
        let mut policy =
            Policy { enforce: PRIVILEGED_LATEST, audit: PRIVILEGED_LATEST, warn: PRIVILEGED_LATEST };
        let mut errors = Vec::new();
        // Most namespaces carry none of the labels: nothing to parse.
        let Some(labels) = labels.filter(|l| l.keys().any(|k| k.starts_with(LABEL_PREFIX))) else {
            return (policy, errors);
        };
        let modes: [(&str, &mut LevelVersion, Level); 3] = [
            ("enforce", &mut policy.enforce, Level::Restricted),
            ("audit", &mut policy.audit, Level::Privileged),
            ("warn", &mut policy.warn, Level::Privileged),
        ];
        for (mode, lv, when_invalid) in modes {
            let level_label = format!("{LABEL_PREFIX}{mode}");
            if let Some(value) = labels.get(&level_label) {
                lv.level = Level::parse(value).unwrap_or_else(|| {
                    errors.push(invalid_label(
                        &level_label,
                        value,
                        "must be one of privileged, baseline, restricted",
                    ));
                    when_invalid
                });
            }
            let version_label = format!("{level_label}-version");
            if let Some(value) = labels.get(&version_label) {
                lv.version = Version::parse(value).unwrap_or_else(|| {
                    errors.push(invalid_label(&version_label, value, r#"must be "latest" or "v1.x""#));
                    Version::Latest
                });
            }
        }
        (policy, errors)
    }

    /// Whether nothing is checked in any mode.
    pub fn fully_privileged(&self) -> bool {
        [self.enforce, self.audit, self.warn].iter().all(|lv| lv.level == Level::Privileged)
    }
}

fn invalid_label(label: &str, value: &str, why: &str) -> StatusCause {
    errors::cause(
        "FieldValueInvalid",
        &format!("metadata.labels[{label}]"),
        format!("Invalid value: {}: {why}", go_quote(value)),
    )
}

/// One check a Pod failed: a short reason and what in the Pod made it fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// `host namespaces`, `allowPrivilegeEscalation != false`...
    pub reason: String,
    /// `hostNetwork=true`, `container "app" must set ...`; may be empty.
    pub detail: String,
}

/// `AggregateCheckResult.ForbiddenDetail`: `reason (detail), reason (detail)`.
pub fn forbidden_detail(violations: &[Violation]) -> String {
    let parts: Vec<String> = violations
        .iter()
        .map(|v| if v.detail.is_empty() { v.reason.clone() } else { format!("{} ({})", v.reason, v.detail) })
        .collect();
    parts.join(", ")
}

/// `AggregateCheckResult.ForbiddenReason`: the reasons alone.
pub fn forbidden_reason(violations: &[Violation]) -> String {
    violations.iter().map(|v| v.reason.as_str()).collect::<Vec<_>>().join(", ")
}

/// What a Pod (or a template) holds that the checks read.
pub struct PodView<'a> {
    /// Its annotations (AppArmor and seccomp annotations).
    pub annotations: Option<&'a BTreeMap<String, String>>,
    /// Its spec.
    pub spec: &'a Map<String, Value>,
}

impl<'a> PodView<'a> {
    /// A Pod's (or a template's) view: its annotations and the `spec` of `holder`, its content
    /// (empty when it has none).
    pub fn of(annotations: Option<&'a BTreeMap<String, String>>, holder: &'a Value) -> Self {
        PodView { annotations, spec: spec_of(holder) }
    }
}

/// The `spec` object of a Pod's content or a template (an empty one when there is none).
pub fn spec_of(holder: &Value) -> &Map<String, Value> {
    static NONE: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
    holder.get("spec").and_then(Value::as_object).unwrap_or(&NONE)
}

/// The checks `lv` selects, run on `pod`: its violations, in upstream's order (empty when it is
/// allowed, and always for `privileged`).
pub fn evaluate(lv: LevelVersion, pod: &PodView<'_>) -> Vec<Violation> {
    if lv.level == Level::Privileged {
        return Vec::new();
    }
    let v = lv.version.effective_minor();
    let restricted = lv.level == Level::Restricted;
    let spec = pod.spec;
    let annotations = pod.annotations;
    let windows = v >= 25 && is_windows(spec);
    // Baseline checks by id, each unless a restricted check that applies overrides it, then the
    // restricted ones by id (`populate`'s order).
    let checks: [Option<Option<Violation>>; 17] = [
        Some(app_armor_profile(annotations, spec)),
        (!(restricted && v >= 22)).then(|| capabilities_baseline(spec)),
        Some(host_namespaces(spec)),
        (!restricted).then(|| host_path_volumes(spec)),
        Some(host_ports(spec)),
        Some(privileged(spec)),
        Some(proc_mount(spec)),
        Some(se_linux_options(spec, v)),
        (!(restricted && v >= 19)).then(|| seccomp_profile_baseline(annotations, spec, v)),
        Some(sysctls(spec, v)),
        Some(windows_host_process(spec)),
        // Restricted.
        (restricted && v >= 8 && !windows).then(|| allow_privilege_escalation(spec)),
        (restricted && v >= 22 && !windows).then(|| capabilities_restricted(spec)),
        restricted.then(|| restricted_volumes(spec)),
        restricted.then(|| run_as_non_root(spec)),
        (restricted && v >= 23).then(|| run_as_user(spec)),
        (restricted && v >= 19 && !windows).then(|| seccomp_profile_restricted(spec)),
    ];
    checks.into_iter().flatten().flatten().collect()
}

fn violation(reason: impl Into<String>, detail: impl Into<String>) -> Option<Violation> {
    Some(Violation { reason: reason.into(), detail: detail.into() })
}

fn is_windows(spec: &Map<String, Value>) -> bool {
    spec.get("os").and_then(|os| os.get("name")).and_then(Value::as_str) == Some("windows")
}

/// `joinQuote`: each item in double quotes, comma-separated (no escaping).
fn join_quote<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    let quoted: Vec<String> = items.into_iter().map(|s| format!("\"{}\"", s.as_ref())).collect();
    quoted.join(", ")
}

fn pluralize<'s>(singular: &'s str, plural: &'s str, count: usize) -> &'s str {
    if count == 1 { singular } else { plural }
}

/// `container "a"` or `containers "a", "b"`.
fn containers_named(names: &[&str]) -> String {
    format!("{} {}", pluralize("container", "containers", names.len()), join_quote(names))
}

fn object(value: Option<&Value>) -> Option<&Map<String, Value>> {
    value.and_then(Value::as_object)
}

fn flag(value: Option<&Value>) -> Option<bool> {
    value.and_then(Value::as_bool)
}

/// Every container, init containers first and ephemeral containers last (`visitContainers`).
fn containers(spec: &Map<String, Value>) -> impl Iterator<Item = &Map<String, Value>> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .filter_map(|key| spec.get(key).and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_object)
}

fn name_of(container: &Map<String, Value>) -> &str {
    container.get("name").and_then(Value::as_str).unwrap_or_default()
}

fn security_context(container: &Map<String, Value>) -> Option<&Map<String, Value>> {
    object(container.get("securityContext"))
}

fn pod_security_context(spec: &Map<String, Value>) -> Option<&Map<String, Value>> {
    object(spec.get("securityContext"))
}

/// `<setters> must not set ...`: the pod and the containers that set a forbidden value.
fn setters(pod: bool, containers: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    if pod {
        out.push("pod".to_owned());
    }
    if !containers.is_empty() {
        out.push(containers_named(containers));
    }
    out
}

fn app_armor_profile(
    annotations: Option<&BTreeMap<String, String>>,
    spec: &Map<String, Value>,
) -> Option<Violation> {
    let (pod_bad, bad_containers, bad_values) = bad_profile_types(spec, "appArmorProfile");
    let mut setters = setters(pod_bad, &bad_containers);
    let mut values: Vec<String> = bad_values.into_iter().collect();
    let forbidden: Vec<String> = annotations
        .into_iter()
        .flatten()
        .filter(|(k, v)| {
            k.starts_with("container.apparmor.security.beta.kubernetes.io/")
                && !(v.is_empty() || *v == "runtime/default" || v.starts_with("localhost/"))
        })
        .map(|(k, v)| format!("{k}={}", go_quote(v)))
        .collect();
    if !forbidden.is_empty() {
        setters.push(pluralize("annotation", "annotations", forbidden.len()).to_owned());
        values.extend(forbidden);
    }
    if setters.is_empty() {
        return None;
    }
    violation(
        pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles", values.len()),
        format!("{} must not set AppArmor profile type to {}", setters.join(" and "), join_quote(&values)),
    )
}

const DEFAULT_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

fn added_capabilities(container: &Map<String, Value>) -> impl Iterator<Item = &str> {
    security_context(container)
        .and_then(|sc| object(sc.get("capabilities")))
        .and_then(|caps| caps.get("add"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| c.as_str().unwrap_or_default())
}

fn capabilities_baseline(spec: &Map<String, Value>) -> Option<Violation> {
    let mut bad_containers = Vec::new();
    let mut forbidden = BTreeSet::new();
    for c in containers(spec) {
        let mut valid = true;
        for cap in added_capabilities(c) {
            if !DEFAULT_CAPABILITIES.contains(&cap) {
                valid = false;
                forbidden.insert(cap);
            }
        }
        if !valid {
            bad_containers.push(name_of(c));
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    violation(
        "non-default capabilities",
        format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_named(&bad_containers),
            join_quote(&forbidden)
        ),
    )
}

fn host_namespaces(spec: &Map<String, Value>) -> Option<Violation> {
    let shared: Vec<&str> =
        [("hostNetwork", "hostNetwork=true"), ("hostPID", "hostPID=true"), ("hostIPC", "hostIPC=true")]
            .into_iter()
            .filter(|(key, _)| flag(spec.get(*key)) == Some(true))
            .map(|(_, shown)| shown)
            .collect();
    if shared.is_empty() {
        return None;
    }
    violation("host namespaces", shared.join(", "))
}

fn volumes(spec: &Map<String, Value>) -> impl Iterator<Item = &Map<String, Value>> {
    spec.get("volumes").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_object)
}

fn has_source(volume: &Map<String, Value>, key: &str) -> bool {
    volume.get(key).is_some_and(|v| !v.is_null())
}

fn host_path_volumes(spec: &Map<String, Value>) -> Option<Violation> {
    let host: Vec<&str> = volumes(spec).filter(|v| has_source(v, "hostPath")).map(name_of).collect();
    if host.is_empty() {
        return None;
    }
    violation(
        "hostPath volumes",
        format!("{} {}", pluralize("volume", "volumes", host.len()), join_quote(&host)),
    )
}

fn host_ports(spec: &Map<String, Value>) -> Option<Violation> {
    let mut bad_containers = Vec::new();
    let mut ports = BTreeSet::new();
    for c in containers(spec) {
        let mut valid = true;
        for port in c.get("ports").and_then(Value::as_array).into_iter().flatten() {
            let host = port.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
            if host != 0 {
                valid = false;
                // Go's sets sort the decimal texts.
                ports.insert(host.to_string());
            }
        }
        if !valid {
            bad_containers.push(name_of(c));
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    violation(
        "hostPort",
        format!(
            "{} {} {} {}",
            containers_named(&bad_containers),
            pluralize("uses", "use", bad_containers.len()),
            pluralize("hostPort", "hostPorts", ports.len()),
            ports.into_iter().collect::<Vec<_>>().join(", ")
        ),
    )
}

/// The names of the containers whose `securityContext.<key>` (absent: `None`) `forbidden` refuses.
fn containers_flagged<'s>(
    spec: &'s Map<String, Value>,
    key: &str,
    forbidden: impl Fn(Option<bool>) -> bool,
) -> Vec<&'s str> {
    containers(spec)
        .filter(|c| forbidden(flag(security_context(c).and_then(|sc| sc.get(key)))))
        .map(name_of)
        .collect()
}

fn privileged(spec: &Map<String, Value>) -> Option<Violation> {
    let bad = containers_flagged(spec, "privileged", |set| set == Some(true));
    if bad.is_empty() {
        return None;
    }
    violation(
        "privileged",
        format!("{} must not set securityContext.privileged=true", containers_named(&bad)),
    )
}

fn proc_mount(spec: &Map<String, Value>) -> Option<Violation> {
    let mut bad = Vec::new();
    let mut types = BTreeSet::new();
    for c in containers(spec) {
        if let Some(kind) = security_context(c).and_then(|sc| sc.get("procMount")).and_then(Value::as_str)
            && kind != "Default"
        {
            bad.push(name_of(c));
            types.insert(kind);
        }
    }
    if bad.is_empty() {
        return None;
    }
    violation(
        "procMount",
        format!(
            "{} must not set securityContext.procMount to {}",
            containers_named(&bad),
            join_quote(&types)
        ),
    )
}

fn se_linux_options(spec: &Map<String, Value>, v: u64) -> Option<Violation> {
    let allowed: &[&str] = if v >= 31 {
        &["", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"]
    } else {
        &["", "container_t", "container_init_t", "container_kvm_t"]
    };
    let mut bad_types = BTreeSet::new();
    let (mut set_user, mut set_role) = (false, false);
    let mut valid = |options: &Map<String, Value>| {
        let text = |key: &str| options.get(key).and_then(Value::as_str).unwrap_or_default();
        let mut ok = true;
        if !allowed.contains(&text("type")) {
            ok = false;
            bad_types.insert(text("type").to_owned());
        }
        if !text("user").is_empty() {
            ok = false;
            set_user = true;
        }
        if !text("role").is_empty() {
            ok = false;
            set_role = true;
        }
        ok
    };
    let pod_bad =
        pod_security_context(spec).and_then(|sc| object(sc.get("seLinuxOptions"))).is_some_and(|o| !valid(o));
    let mut bad_containers = Vec::new();
    for c in containers(spec) {
        if let Some(options) = security_context(c).and_then(|sc| object(sc.get("seLinuxOptions")))
            && !valid(options)
        {
            bad_containers.push(name_of(c));
        }
    }
    let setters = setters(pod_bad, &bad_containers);
    if setters.is_empty() {
        return None;
    }
    let mut data = Vec::new();
    if !bad_types.is_empty() {
        data.push(format!("{} {}", pluralize("type", "types", bad_types.len()), join_quote(&bad_types)));
    }
    if set_user {
        data.push("user may not be set".to_owned());
    }
    if set_role {
        data.push("role may not be set".to_owned());
    }
    violation(
        "seLinuxOptions",
        format!(
            "{} set forbidden securityContext.seLinuxOptions: {}",
            setters.join(" and "),
            data.join("; ")
        ),
    )
}

/// Whether the pod's `securityContext.<key>` sets a profile type other than `RuntimeDefault` or
/// `Localhost`, the containers whose own do, and those types (AppArmor's and seccomp's baseline
/// checks read both profiles alike).
fn bad_profile_types<'s>(spec: &'s Map<String, Value>, key: &str) -> (bool, Vec<&'s str>, BTreeSet<String>) {
    let mut bad_values = BTreeSet::new();
    let pod_bad = match pod_security_context(spec).and_then(|sc| object(sc.get(key))) {
        Some(profile) => valid_profile_type(profile).map_err(|t| bad_values.insert(t)).is_err(),
        None => false,
    };
    let mut bad_containers = Vec::new();
    for c in containers(spec) {
        if let Some(profile) = security_context(c).and_then(|sc| object(sc.get(key)))
            && let Err(t) = valid_profile_type(profile)
        {
            bad_containers.push(name_of(c));
            bad_values.insert(t);
        }
    }
    (pod_bad, bad_containers, bad_values)
}

/// A profile whose type is `RuntimeDefault` or `Localhost`, else its type.
fn valid_profile_type(profile: &Map<String, Value>) -> Result<(), String> {
    match profile.get("type").and_then(Value::as_str).unwrap_or_default() {
        "RuntimeDefault" | "Localhost" => Ok(()),
        other => Err(other.to_owned()),
    }
}

/// The seccomp check of the baseline: the alpha annotations before v1.19, the fields since.
fn seccomp_profile_baseline(
    annotations: Option<&BTreeMap<String, String>>,
    spec: &Map<String, Value>,
    v: u64,
) -> Option<Violation> {
    if v < 19 {
        let valid = |value: &str| {
            value == "runtime/default" || value == "docker/default" || value.starts_with("localhost/")
        };
        let annotation = |key: &str| annotations.and_then(|a| a.get(key));
        let mut forbidden = BTreeSet::new();
        let pod_key = "seccomp.security.alpha.kubernetes.io/pod";
        if let Some(value) = annotation(pod_key).filter(|value| !valid(value)) {
            forbidden.insert(format!("{pod_key}={}", go_quote(value)));
        }
        for c in containers(spec) {
            let key = format!("container.seccomp.security.alpha.kubernetes.io/{}", name_of(c));
            if let Some(value) = annotation(&key).filter(|value| !valid(value)) {
                forbidden.insert(format!("{key}={}", go_quote(value)));
            }
        }
        if forbidden.is_empty() {
            return None;
        }
        let listed = forbidden.iter().map(String::as_str).collect::<Vec<_>>().join(", ");
        return violation(
            "seccompProfile",
            format!("forbidden {} {listed}", pluralize("annotation", "annotations", forbidden.len())),
        );
    }
    let (pod_bad, bad_containers, bad_values) = bad_profile_types(spec, "seccompProfile");
    let setters = setters(pod_bad, &bad_containers);
    if setters.is_empty() {
        return None;
    }
    violation(
        "seccompProfile",
        format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            setters.join(" and "),
            join_quote(&bad_values)
        ),
    )
}

fn sysctls(spec: &Map<String, Value>, v: u64) -> Option<Violation> {
    let allowed = |name: &str| {
        matches!(
            name,
            "kernel.shm_rmid_forced"
                | "net.ipv4.ip_local_port_range"
                | "net.ipv4.tcp_syncookies"
                | "net.ipv4.ping_group_range"
                | "net.ipv4.ip_unprivileged_port_start"
        ) || (v >= 27 && name == "net.ipv4.ip_local_reserved_ports")
            || (v >= 29
                && matches!(
                    name,
                    "net.ipv4.tcp_keepalive_time"
                        | "net.ipv4.tcp_fin_timeout"
                        | "net.ipv4.tcp_keepalive_intvl"
                        | "net.ipv4.tcp_keepalive_probes"
                ))
            || (v >= 32 && matches!(name, "net.ipv4.tcp_rmem" | "net.ipv4.tcp_wmem"))
    };
    let forbidden: Vec<&str> = pod_security_context(spec)
        .and_then(|sc| sc.get("sysctls"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| s.get("name").and_then(Value::as_str).unwrap_or_default())
        .filter(|name| !allowed(name))
        .collect();
    if forbidden.is_empty() {
        return None;
    }
    violation("forbidden sysctls", forbidden.join(", "))
}

fn windows_host_process(spec: &Map<String, Value>) -> Option<Violation> {
    let host_process = |sc: Option<&Map<String, Value>>| {
        flag(sc.and_then(|sc| sc.get("windowsOptions")).and_then(|w| w.get("hostProcess"))) == Some(true)
    };
    let bad: Vec<&str> =
        containers(spec).filter(|c| host_process(security_context(c))).map(name_of).collect();
    let setters = setters(host_process(pod_security_context(spec)), &bad);
    if setters.is_empty() {
        return None;
    }
    violation(
        "hostProcess",
        format!("{} must not set securityContext.windowsOptions.hostProcess=true", setters.join(" and ")),
    )
}

fn allow_privilege_escalation(spec: &Map<String, Value>) -> Option<Violation> {
    let bad = containers_flagged(spec, "allowPrivilegeEscalation", |set| set != Some(false));
    if bad.is_empty() {
        return None;
    }
    violation(
        "allowPrivilegeEscalation != false",
        format!("{} must set securityContext.allowPrivilegeEscalation=false", containers_named(&bad)),
    )
}

fn capabilities_restricted(spec: &Map<String, Value>) -> Option<Violation> {
    let mut missing_drop_all = Vec::new();
    let mut adding_forbidden = Vec::new();
    let mut forbidden = BTreeSet::new();
    for c in containers(spec) {
        let Some(caps) = security_context(c).and_then(|sc| object(sc.get("capabilities"))) else {
            missing_drop_all.push(name_of(c));
            continue;
        };
        let dropped_all = caps
            .get("drop")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|d| d.as_str() == Some("ALL"));
        if !dropped_all {
            missing_drop_all.push(name_of(c));
        }
        let mut adds = false;
        for cap in added_capabilities(c).filter(|cap| *cap != "NET_BIND_SERVICE") {
            adds = true;
            forbidden.insert(cap);
        }
        if adds {
            adding_forbidden.push(name_of(c));
        }
    }
    let mut details = Vec::new();
    if !missing_drop_all.is_empty() {
        details.push(format!(
            r#"{} must set securityContext.capabilities.drop=["ALL"]"#,
            containers_named(&missing_drop_all)
        ));
    }
    if !adding_forbidden.is_empty() {
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_named(&adding_forbidden),
            join_quote(&forbidden)
        ));
    }
    if details.is_empty() {
        return None;
    }
    violation("unrestricted capabilities", details.join("; "))
}

/// The volume sources the restricted level allows, and the names upstream gives the others.
const ALLOWED_VOLUMES: [&str; 9] = [
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
];
const RESTRICTED_VOLUMES: [(&str, &str); 21] = [
    ("hostPath", "hostPath"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("gitRepo", "gitRepo"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("rbd", "rbd"),
    ("flexVolume", "flexVolume"),
    ("cinder", "cinder"),
    ("cephfs", "cephfs"),
    ("flocker", "flocker"),
    ("fc", "fc"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("quobyte", "quobyte"),
    ("azureDisk", "azureDisk"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("scaleIO", "scaleIO"),
    ("storageos", "storageos"),
];

fn restricted_volumes(spec: &Map<String, Value>) -> Option<Violation> {
    let mut bad = Vec::new();
    let mut types = BTreeSet::new();
    for volume in volumes(spec) {
        if ALLOWED_VOLUMES.iter().any(|key| has_source(volume, key)) {
            continue;
        }
        bad.push(name_of(volume));
        let kind =
            RESTRICTED_VOLUMES.iter().find(|(key, _)| has_source(volume, key)).map_or("unknown", |(_, n)| *n);
        types.insert(kind);
    }
    if bad.is_empty() {
        return None;
    }
    violation(
        "restricted volume types",
        format!(
            "{} {} {} {} {}",
            pluralize("volume", "volumes", bad.len()),
            join_quote(&bad),
            pluralize("uses", "use", bad.len()),
            pluralize("restricted volume type", "restricted volume types", types.len()),
            join_quote(&types)
        ),
    )
}

fn run_as_non_root(spec: &Map<String, Value>) -> Option<Violation> {
    let pod_value = flag(pod_security_context(spec).and_then(|sc| sc.get("runAsNonRoot")));
    let mut explicitly_bad = Vec::new();
    let mut implicitly_bad = Vec::new();
    for c in containers(spec) {
        match flag(security_context(c).and_then(|sc| sc.get("runAsNonRoot"))) {
            Some(false) => explicitly_bad.push(name_of(c)),
            Some(true) => {}
            None if pod_value != Some(true) => implicitly_bad.push(name_of(c)),
            None => {}
        }
    }
    let setters = setters(pod_value == Some(false), &explicitly_bad);
    if !setters.is_empty() {
        return violation(
            "runAsNonRoot != true",
            format!("{} must not set securityContext.runAsNonRoot=false", setters.join(" and ")),
        );
    }
    if implicitly_bad.is_empty() {
        return None;
    }
    violation(
        "runAsNonRoot != true",
        format!("pod or {} must set securityContext.runAsNonRoot=true", containers_named(&implicitly_bad)),
    )
}

fn run_as_user(spec: &Map<String, Value>) -> Option<Violation> {
    let root = |sc: Option<&Map<String, Value>>| {
        sc.and_then(|sc| sc.get("runAsUser")).and_then(Value::as_i64) == Some(0)
    };
    let bad: Vec<&str> = containers(spec).filter(|c| root(security_context(c))).map(name_of).collect();
    let setters = setters(root(pod_security_context(spec)), &bad);
    if setters.is_empty() {
        return None;
    }
    violation("runAsUser=0", format!("{} must not set runAsUser=0", setters.join(" and ")))
}

fn seccomp_profile_restricted(spec: &Map<String, Value>) -> Option<Violation> {
    let mut bad_values = BTreeSet::new();
    let (pod_bad, pod_set) = match pod_security_context(spec).and_then(|sc| object(sc.get("seccompProfile")))
    {
        Some(profile) => match valid_profile_type(profile) {
            Ok(()) => (false, true),
            Err(t) => {
                bad_values.insert(t);
                (true, false)
            }
        },
        None => (false, false),
    };
    let mut explicitly_bad = Vec::new();
    let mut implicitly_bad = Vec::new();
    for c in containers(spec) {
        match security_context(c).and_then(|sc| object(sc.get("seccompProfile"))) {
            Some(profile) => {
                if let Err(t) = valid_profile_type(profile) {
                    explicitly_bad.push(name_of(c));
                    bad_values.insert(t);
                }
            }
            None if !pod_set => implicitly_bad.push(name_of(c)),
            None => {}
        }
    }
    let setters = setters(pod_bad, &explicitly_bad);
    if !setters.is_empty() {
        return violation(
            "seccompProfile",
            format!(
                "{} must not set securityContext.seccompProfile.type to {}",
                setters.join(" and "),
                join_quote(&bad_values)
            ),
        );
    }
    if implicitly_bad.is_empty() {
        return None;
    }
    violation(
        "seccompProfile",
        format!(
            r#"pod or {} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#,
            containers_named(&implicitly_bad)
        ),
    )
}

/// The `warn` mode: a warning `would violate PodSecurity "<level>": <detail>` when `pod` violates
/// `lv`.
pub fn warn(lv: LevelVersion, pod: &PodView<'_>, warnings: &mut Vec<String>) {
    let violations = evaluate(lv, pod);
    if !violations.is_empty() {
        warnings.push(format!(
            "would violate PodSecurity {}: {}",
            go_quote(&lv.to_string()),
            forbidden_detail(&violations)
        ));
    }
}

/// Whether a Pod update can change what the policy checks (`isSignificantPodUpdate`): the number
/// of containers or init containers, an image, a container's seccomp annotation, or an
/// ephemeral container added or changed. Other updates are always admitted.
pub fn significant_pod_update(
    new_annotations: Option<&BTreeMap<String, String>>,
    new: &Map<String, Value>,
    old_annotations: Option<&BTreeMap<String, String>>,
    old: &Map<String, Value>,
) -> bool {
    fn list<'s>(spec: &'s Map<String, Value>, key: &str) -> Vec<&'s Map<String, Value>> {
        spec.get(key).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_object).collect()
    }
    fn annotation<'a>(annotations: Option<&'a BTreeMap<String, String>>, key: &str) -> &'a str {
        annotations.and_then(|a| a.get(key)).map(String::as_str).unwrap_or_default()
    }
    let changed = |c: &Map<String, Value>, o: &Map<String, Value>| {
        let key = format!("container.seccomp.security.alpha.kubernetes.io/{}", name_of(c));
        c.get("image") != o.get("image")
            || annotation(new_annotations, &key) != annotation(old_annotations, &key)
    };
    for key in ["containers", "initContainers"] {
        let (n, o) = (list(new, key), list(old, key));
        if n.len() != o.len() || n.iter().zip(&o).any(|(c, o)| changed(c, o)) {
            return true;
        }
    }
    let old_ephemeral = list(old, "ephemeralContainers");
    list(new, "ephemeralContainers").iter().any(|c| {
        match old_ephemeral.iter().find(|o| name_of(o) == name_of(c)) {
            None => true,
            Some(o) => changed(c, o),
        }
    })
}

/// The warnings of a namespace update that tightens `enforce` (`EvaluatePodsInNamespace`): one
/// per distinct list of reasons among `pods`, naming the first pod by name and how many others,
/// sorted, after a header; none when every Pod passes.
pub fn existing_pod_warnings(
    namespace: &str,
    enforce: LevelVersion,
    pods: &[PodView<'_>],
    names: &[&str],
) -> Vec<String> {
    // reasons -> (lexically first pod name, count)
    let mut by_reason: BTreeMap<String, (&str, usize)> = BTreeMap::new();
    for (pod, name) in pods.iter().zip(names) {
        let violations = evaluate(enforce, pod);
        if violations.is_empty() {
            continue;
        }
        let entry = by_reason.entry(forbidden_reason(&violations)).or_insert((name, 0));
        if *name < entry.0 {
            entry.0 = name;
        }
        entry.1 += 1;
    }
    if by_reason.is_empty() {
        return Vec::new();
    }
    let mut pod_warnings: Vec<String> = by_reason
        .into_iter()
        .map(|(reason, (name, count))| match count {
            1 => format!("{name}: {reason}"),
            2 => format!("{name} (and 1 other pod): {reason}"),
            n => format!("{name} (and {} other pods): {reason}", n - 1),
        })
        .collect();
    pod_warnings.sort();
    let mut warnings = vec![format!(
        "existing pods in namespace {} violate the new PodSecurity enforce level {}",
        go_quote(namespace),
        go_quote(&enforce.to_string())
    )];
    warnings.extend(pod_warnings);
    warnings
}
