//! `kubectl get` tables against `kube-sim serve`: the columns kube-apiserver prints for the
//! built-in kinds, and a CRD's `additionalPrinterColumns` for its custom resources.
//!
//! Each test starts its own server in-process and runs the real kubectl against it (as
//! serve_kubectl.rs does); kubectl must be installed (`.ci/install-kubectl`).

#[path = "support/kubectl.rs"]
mod kubectl;
use kubectl::Kubectl;

/// The words of a table line, split on whitespace (kubectl pads columns with spaces).
fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// The header words and the row words of `kubectl get` output.
fn table(output: &str) -> (Vec<&str>, Vec<Vec<&str>>) {
    let mut lines = output.lines();
    let header = words(lines.next().unwrap_or(""));
    (header, lines.map(words).collect())
}

const POD: &str = "apiVersion: v1
kind: Pod
metadata: {name: web-0}
spec:
  containers:
  - {name: app, image: nginx}
";

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: app, image: nginx}
";

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Phase, type: string, jsonPath: .status.phase}
    - {name: Size, type: string, jsonPath: .spec.size, priority: 1}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer}
              size: {type: string}
          status:
            type: object
            properties:
              phase: {type: string}
";

const WIDGET: &str = "apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
spec: {replicas: 3, size: large}
";

/// Wait until the CRD's resource is discoverable, as kubectl needs it in discovery.
fn create_crd(k: &Kubectl, crd: &str) {
    k.ok(&["create", "-f", &k.file("crd.yaml", crd)]);
    k.ok(&["wait", "--for=condition=Established", "crd/widgets.example.com"]);
}

#[test]
fn get_pods_prints_ready_status_restarts_and_age_and_a_new_pod_is_0_of_1_pending() {
    let k = Kubectl::start();
    k.ok(&["create", "-f", &k.file("pod.yaml", POD)]);
    let output = k.ok(&["get", "pods"]);
    let (header, rows) = table(&output);
    assert_eq!(header, ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][..4], ["web-0", "0/1", "Pending", "0"]);
}

#[test]
fn get_pods_wide_adds_ip_node_nominated_node_and_readiness_gates_which_are_none_for_an_unscheduled_pod() {
    let k = Kubectl::start();
    k.ok(&["create", "-f", &k.file("pod.yaml", POD)]);
    let output = k.ok(&["get", "pods", "-o", "wide"]);
    let (header, rows) = table(&output);
    // `NOMINATED NODE` and `READINESS GATES` are two words each.
    let wide = ["IP", "NODE", "NOMINATED", "NODE", "READINESS", "GATES"];
    assert_eq!(header, [&["NAME", "READY", "STATUS", "RESTARTS", "AGE"][..], &wide[..]].concat());
    assert_eq!(rows[0][5..], ["<none>", "<none>", "<none>", "<none>"]);
}

#[test]
fn get_one_pod_by_name_prints_the_same_columns() {
    let k = Kubectl::start();
    k.ok(&["create", "-f", &k.file("pod.yaml", POD)]);
    let output = k.ok(&["get", "pod", "web-0"]);
    let (header, rows) = table(&output);
    assert_eq!(header, ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
    assert_eq!(rows[0][..4], ["web-0", "0/1", "Pending", "0"]);
}

#[test]
fn a_pod_being_deleted_shows_terminating() {
    let k = Kubectl::start();
    let with_finalizer = POD.replace("{name: web-0}", "{name: web-0, finalizers: [example.com/hold]}");
    k.ok(&["create", "-f", &k.file("pod.yaml", &with_finalizer)]);
    k.ok(&["delete", "pod", "web-0", "--wait=false"]);
    let output = k.ok(&["get", "pods"]);
    let (_, rows) = table(&output);
    assert_eq!(rows[0][2], "Terminating");
}

#[test]
fn get_deployments_prints_ready_up_to_date_available_and_age() {
    let k = Kubectl::start();
    k.ok(&["create", "-f", &k.file("deploy.yaml", DEPLOYMENT)]);
    let output = k.ok(&["get", "deployments"]);
    let (header, rows) = table(&output);
    assert_eq!(header, ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]);
    assert_eq!(rows[0][..4], ["web", "0/2", "0", "0"]);
}

#[test]
fn get_configmaps_and_secrets_count_their_data() {
    let k = Kubectl::start();
    k.ok(&["create", "configmap", "app", "--from-literal=a=1", "--from-literal=b=2"]);
    k.ok(&["create", "secret", "generic", "login", "--from-literal=user=admin"]);
    let output = k.ok(&["get", "configmaps"]);
    let (header, rows) = table(&output);
    assert_eq!((header, &rows[0][..2]), (vec!["NAME", "DATA", "AGE"], &["app", "2"][..]));
    let output = k.ok(&["get", "secrets"]);
    let (header, rows) = table(&output);
    assert_eq!(header, ["NAME", "TYPE", "DATA", "AGE"]);
    assert_eq!(rows[0][..3], ["login", "Opaque", "1"]);
}

#[test]
fn get_services_prints_type_cluster_ip_external_ip_and_ports() {
    let k = Kubectl::start();
    k.ok(&["create", "service", "clusterip", "web", "--tcp=80:8080"]);
    let output = k.ok(&["get", "services"]);
    let (header, rows) = table(&output);
    assert_eq!(header, ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]);
    // The API server's own `kubernetes` Service first (every cluster has it), then ours.
    assert_eq!(
        (rows[0][0], rows[0][1], rows[0][2], rows[0][3], rows[0][4]),
        ("kubernetes", "ClusterIP", "10.96.0.1", "<none>", "443/TCP")
    );
    assert_eq!((rows[1][0], rows[1][1], rows[1][3], rows[1][4]), ("web", "ClusterIP", "<none>", "80/TCP"));
}

#[test]
fn get_jobs_prints_status_completions_duration_and_age() {
    let k = Kubectl::start();
    k.ok(&["create", "job", "once", "--image=busybox"]);
    let output = k.ok(&["get", "jobs"]);
    let (header, rows) = table(&output);
    assert_eq!(header, ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]);
    assert_eq!(rows[0][..3], ["once", "Running", "0/1"]);
}

#[test]
fn get_namespaces_prints_their_status() {
    let k = Kubectl::start();
    k.ok(&["create", "namespace", "team"]);
    let output = k.ok(&["get", "namespaces", "team"]);
    let (header, rows) = table(&output);
    assert_eq!(header, ["NAME", "STATUS", "AGE"]);
    assert_eq!(rows[0][..2], ["team", "Active"]);
}

#[test]
fn get_custom_resources_prints_the_crd_printer_columns_with_a_blank_cell_for_an_unset_path() {
    let k = Kubectl::start();
    create_crd(&k, CRD);
    k.ok(&["create", "-f", &k.file("w1.yaml", WIDGET)]);
    let output = k.ok(&["get", "widgets"]);
    let (header, rows) = table(&output);
    assert_eq!(header, ["NAME", "REPLICAS", "PHASE"]);
    // kubectl prints the null cell of an unset path as blank.
    assert_eq!(rows, [["w1", "3"]]);
    k.ok(&[
        "patch",
        "widget",
        "w1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Ready"}}"#,
    ]);
    let output = k.ok(&["get", "widgets"]);
    let (_, rows) = table(&output);
    assert_eq!(rows, [["w1", "3", "Ready"]]);
}

#[test]
fn get_custom_resources_wide_adds_the_priority_1_columns() {
    let k = Kubectl::start();
    create_crd(&k, CRD);
    k.ok(&["create", "-f", &k.file("w1.yaml", WIDGET)]);
    let output = k.ok(&["get", "widgets", "-o", "wide"]);
    let (header, rows) = table(&output);
    assert_eq!(header, ["NAME", "REPLICAS", "PHASE", "SIZE"]);
    // The unset Phase is a blank cell between REPLICAS and SIZE.
    assert_eq!(rows, [["w1", "3", "large"]]);
    let line = output.lines().nth(1).unwrap_or("");
    let phase_at = output.lines().next().unwrap_or("").find("PHASE").unwrap_or(0);
    assert_eq!(line.get(phase_at..phase_at + 5), Some("     "));
}

#[test]
fn a_crd_without_printer_columns_gets_name_and_age() {
    let k = Kubectl::start();
    let plain = CRD.lines().filter(|l| !l.contains("jsonPath") && !l.contains("additionalPrinterColumns"));
    create_crd(&k, &plain.collect::<Vec<_>>().join("\n"));
    k.ok(&["create", "-f", &k.file("w1.yaml", WIDGET)]);
    let output = k.ok(&["get", "widgets"]);
    let (header, rows) = table(&output);
    assert_eq!(header, ["NAME", "AGE"]);
    assert_eq!(rows[0][0], "w1");
    assert!(rows[0][1].ends_with('s'), "a fresh object's age is in seconds: {:?}", rows[0]);
}

#[test]
fn get_serviceaccounts_prints_secrets_and_o_name_still_works() {
    let k = Kubectl::start();
    k.ok(&["create", "serviceaccount", "robot"]);
    let output = k.ok(&["get", "serviceaccounts", "robot"]);
    let (header, rows) = table(&output);
    assert_eq!(header, ["NAME", "SECRETS", "AGE"]);
    assert_eq!(rows[0][..2], ["robot", "0"]);
    assert_eq!(k.ok(&["get", "pods,serviceaccounts", "-o", "name"]), "serviceaccount/robot\n");
}

const PDB_AND_HPA: &str = "apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
";

#[test]
fn get_pdb_and_hpa_prints_both_tables_with_n_a_and_unknown_cells_and_the_defaulted_min_pods() {
    let k = Kubectl::start();
    k.ok(&["create", "-f", &k.file("pdb-hpa.yaml", PDB_AND_HPA)]);
    let output = k.ok(&["get", "pdb,hpa"]);
    // kubectl prints one table per kind, separated by a blank line.
    let tables: Vec<&str> = output.split("\n\n").collect();
    assert_eq!(tables.len(), 2, "{output}");
    let (header, rows) = table(tables[0]);
    assert_eq!(header, ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"]);
    assert_eq!(rows[0][..3], ["poddisruptionbudget.policy/web", "1", "N/A"]);
    let (header, rows) = table(tables[1]);
    assert_eq!(header, ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]);
    // MINPODS is 1: autoscaling/v2 defaults an unset minReplicas (`<unset>` is for a nil one).
    assert_eq!(
        rows[0][..6],
        ["horizontalpodautoscaler.autoscaling/web", "Deployment/web", "cpu:", "<unknown>/80%", "1", "5"]
    );
}

#[test]
fn a_kind_without_a_printer_gets_the_default_convertors_created_at_as_crds_do() {
    let k = Kubectl::start();
    create_crd(&k, CRD);
    let output = k.ok(&["get", "crd", "widgets.example.com"]);
    let (header, rows) = table(&output);
    assert_eq!(header, ["NAME", "CREATED", "AT"]);
    assert_eq!(rows[0][0], "widgets.example.com");
    assert!(rows[0][1].ends_with('Z') && rows[0][1].contains('T'), "an RFC 3339 time: {:?}", rows[0]);
}

const DEFAULT_STORAGE_CLASS: &str = "apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations: {storageclass.kubernetes.io/is-default-class: \"true\"}
provisioner: rancher.io/local-path
";

#[test]
fn get_storageclasses_marks_the_default_class_and_o_name_keeps_its_real_name() {
    let k = Kubectl::start();
    k.ok(&["create", "-f", &k.file("sc.yaml", DEFAULT_STORAGE_CLASS)]);
    let output = k.ok(&["get", "storageclasses"]);
    let (header, rows) = table(&output);
    assert_eq!(
        header,
        ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION", "AGE"]
    );
    assert_eq!(
        rows[0][..6],
        ["standard", "(default)", "rancher.io/local-path", "Delete", "Immediate", "false"]
    );
    assert_eq!(k.ok(&["get", "storageclasses", "-o", "name"]), "storageclass.storage.k8s.io/standard\n");
}

const NODE: &str = "apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {node-role.kubernetes.io/control-plane: \"\"}
";

#[test]
fn get_nodes_wide_prints_status_roles_and_unknown_system_info_and_a_cordon_shows() {
    let k = Kubectl::start();
    k.ok(&["create", "-f", &k.file("node.yaml", NODE)]);
    k.ok(&["cordon", "n1"]);
    let output = k.ok(&["get", "nodes", "-o", "wide"]);
    let (header, rows) = table(&output);
    let expected = [
        "NAME",
        "STATUS",
        "ROLES",
        "AGE",
        "VERSION",
        "INTERNAL-IP",
        "EXTERNAL-IP",
        "OS-IMAGE",
        "KERNEL-VERSION",
        "CONTAINER-RUNTIME",
    ];
    assert_eq!(header, expected);
    // The node reports no Ready condition and no version (a blank cell) yet.
    assert_eq!(rows[0][..3], ["n1", "Unknown,SchedulingDisabled", "control-plane"]);
    assert_eq!(rows[0][4..], ["<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"]);
}

const CONFIG_MAPS: &str = "apiVersion: v1
kind: ConfigMap
metadata: {name: b}
data: {order: '1'}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
data: {order: '2', more: x}
";

// `--sort-by` makes kubectl ask each row's whole object (`includeObject=Object`) and sort on
// it; with the metadata alone it found no field to sort on and printed "No resources found".
#[test]
fn get_sort_by_a_field_outside_the_metadata_sorts_the_rows() {
    let k = Kubectl::start();
    k.ok(&["create", "-f", &k.file("cms.yaml", CONFIG_MAPS)]);
    let output = k.ok(&["get", "configmaps", "--sort-by=.data.order"]);
    let (header, rows) = table(&output);
    assert_eq!(header, ["NAME", "DATA", "AGE"]);
    let names: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(names, ["b", "a"]);
    let output = k.ok(&["get", "configmaps", "--sort-by=.data.order", "-o", "name"]);
    assert_eq!(output, "configmap/b\nconfigmap/a\n");
}

// `kubectl get -w` prints a watched object's change with the kind's columns under the one
// header: the watch sends Tables, not bare objects (which it printed as NAME and AGE only).
#[test]
fn get_watch_prints_new_objects_with_the_kinds_columns() {
    let k = Kubectl::start();
    k.ok(&["create", "-f", &k.file("cms.yaml", CONFIG_MAPS)]);
    let out_path = std::path::Path::new(&k.file("watch.out", "")).to_owned();
    let out = std::fs::File::create(&out_path).unwrap();
    let mut watch = k
        .command(&["get", "configmaps", "-w", "--request-timeout=60s"])
        .stdout(out)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("kubectl starts");
    // Once the list is printed the watch is (about to be) open.
    let listed = (0..400).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        std::fs::read_to_string(&out_path).unwrap_or_default().lines().count() >= 3
    });
    assert!(listed, "kubectl printed no list: {:?}", std::fs::read_to_string(&out_path));
    std::thread::sleep(std::time::Duration::from_millis(300));
    let added = CONFIG_MAPS.replace("name: b", "name: c").replace("name: a", "name: d");
    k.ok(&["create", "-f", &k.file("more.yaml", &added)]);
    // kubectl prints a row per watch event as it arrives: the header and four rows, then stop it.
    let printed = (0..400).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        std::fs::read_to_string(&out_path).unwrap_or_default().lines().count() >= 5
    });
    // A moment more, so that a row printed twice would show.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let _ = watch.kill();
    let _ = watch.wait();
    let output = std::fs::read_to_string(&out_path).unwrap();
    assert!(printed, "kubectl printed fewer than the header and four rows: {output:?}");
    let (header, rows) = table(&output);
    assert_eq!(header, ["NAME", "DATA", "AGE"], "{output}");
    let rows: Vec<&[&str]> = rows.iter().map(|r| &r[..2]).collect();
    assert_eq!(rows, [["a", "2"], ["b", "1"], ["c", "1"], ["d", "2"]], "{output}");
}
