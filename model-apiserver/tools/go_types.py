#!/usr/bin/env python3
"""Generates model-apiserver/src/go_types/table.rs: how the Go types of the built-in kinds encode.

kube-apiserver decodes a written built-in object into its Go struct and encodes that struct on
every answer, so what a client reads follows encoding/json's rules for each field: a field with
`omitempty` whose value is empty (`""`, `0`, `false`, an empty or nil slice or map, a nil
pointer) is left out; a struct (never a pointer) is always there, `{}` at least; a field without
`omitempty` is there even when zero (`null` for a nil slice, map or pointer); a zero `metav1.Time`
encodes as `null`. `src/go_types.rs` applies these rules to the JSON of a built-in object, with
this table of the structs reachable from the served kinds: each field's JSON name, whether it has
`omitempty` (or `omitzero`), and its shape (scalar, bytes, time, opaque, struct; a value, a pointer, a slice or a
map of it).

Why a generator and not a crate: no crate carries Go's `omitempty` tags (k8s-openapi's types come
from the OpenAPI documents, which have no such tag), so the facts are read from the Go sources.

Usage (the three repositories as git directories or work trees; their HEAD is read):

    python3 model-apiserver/tools/go_types.py API APIMACHINERY APIEXTENSIONS_APISERVER \
        > model-apiserver/src/go_types/table.rs

where API is a clone of github.com/kubernetes/api, APIMACHINERY of kubernetes/apimachinery and
APIEXTENSIONS_APISERVER of kubernetes/apiextensions-apiserver. Then `cargo fmt`.
"""

import re
import subprocess
import sys

# The served kinds: (group, kind) -> (package, Go struct).
ROOTS = [
    ("", "Namespace", "core/v1", "Namespace"),
    ("", "Pod", "core/v1", "Pod"),
    ("", "ConfigMap", "core/v1", "ConfigMap"),
    ("", "Secret", "core/v1", "Secret"),
    ("", "Service", "core/v1", "Service"),
    ("", "ServiceAccount", "core/v1", "ServiceAccount"),
    ("", "PersistentVolumeClaim", "core/v1", "PersistentVolumeClaim"),
    ("", "PersistentVolume", "core/v1", "PersistentVolume"),
    ("", "Node", "core/v1", "Node"),
    ("", "Endpoints", "core/v1", "Endpoints"),
    ("", "ResourceQuota", "core/v1", "ResourceQuota"),
    ("", "LimitRange", "core/v1", "LimitRange"),
    ("", "PodTemplate", "core/v1", "PodTemplate"),
    ("", "Event", "core/v1", "Event"),
    ("apps", "Deployment", "apps/v1", "Deployment"),
    ("apps", "ReplicaSet", "apps/v1", "ReplicaSet"),
    ("apps", "StatefulSet", "apps/v1", "StatefulSet"),
    ("apps", "DaemonSet", "apps/v1", "DaemonSet"),
    ("apps", "ControllerRevision", "apps/v1", "ControllerRevision"),
    ("batch", "Job", "batch/v1", "Job"),
    ("batch", "CronJob", "batch/v1", "CronJob"),
    ("policy", "PodDisruptionBudget", "policy/v1", "PodDisruptionBudget"),
    ("networking.k8s.io", "Ingress", "networking/v1", "Ingress"),
    ("networking.k8s.io", "NetworkPolicy", "networking/v1", "NetworkPolicy"),
    ("networking.k8s.io", "IngressClass", "networking/v1", "IngressClass"),
    ("autoscaling", "HorizontalPodAutoscaler", "autoscaling/v2", "HorizontalPodAutoscaler"),
    ("storage.k8s.io", "StorageClass", "storage/v1", "StorageClass"),
    ("discovery.k8s.io", "EndpointSlice", "discovery/v1", "EndpointSlice"),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration", "admissionregistration/v1",
     "ValidatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration", "admissionregistration/v1",
     "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy", "admissionregistration/v1",
     "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding", "admissionregistration/v1",
     "ValidatingAdmissionPolicyBinding"),
    ("scheduling.k8s.io", "PriorityClass", "scheduling/v1", "PriorityClass"),
    ("rbac.authorization.k8s.io", "Role", "rbac/v1", "Role"),
    ("rbac.authorization.k8s.io", "RoleBinding", "rbac/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io", "ClusterRole", "rbac/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding", "rbac/v1", "ClusterRoleBinding"),
    ("coordination.k8s.io", "Lease", "coordination/v1", "Lease"),
    ("events.k8s.io", "Event", "events/v1", "Event"),
    ("apiextensions.k8s.io", "CustomResourceDefinition", "apiextensions/v1", "CustomResourceDefinition"),
]

# Package -> (repository index, directory); the Go import path of each.
API_PACKAGES = ["core/v1", "apps/v1", "batch/v1", "policy/v1", "networking/v1", "autoscaling/v2",
                "autoscaling/v1", "storage/v1", "discovery/v1", "admissionregistration/v1",
                "scheduling/v1", "rbac/v1", "coordination/v1", "events/v1"]
PACKAGES = {p: (0, p) for p in API_PACKAGES}
PACKAGES["meta/v1"] = (1, "pkg/apis/meta/v1")
PACKAGES["apiextensions/v1"] = (2, "pkg/apis/apiextensions/v1")
IMPORTS = {f"k8s.io/api/{p}": p for p in API_PACKAGES}
IMPORTS["k8s.io/apimachinery/pkg/apis/meta/v1"] = "meta/v1"
IMPORTS["k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"] = "apiextensions/v1"

# Types from other apimachinery packages, by import path and name: how they encode.
FOREIGN = {
    ("k8s.io/apimachinery/pkg/types", "UID"): ("Scalar", "Str"),
    ("k8s.io/apimachinery/pkg/types", "NodeName"): ("Scalar", "Str"),
    ("k8s.io/apimachinery/pkg/util/intstr", "IntOrString"): ("Opaque", None),
    ("k8s.io/apimachinery/pkg/api/resource", "Quantity"): ("Opaque", None),
    ("k8s.io/apimachinery/pkg/runtime", "RawExtension"): ("Raw", None),
}
# Custom encoders whose zero value is `null`.
TIME = {("meta/v1", "Time"), ("meta/v1", "MicroTime")}

SCALARS = {"string": "Str", "bool": "Bool", "float32": "Num", "float64": "Num"}
for n in ["int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64"]:
    SCALARS[n] = "Num"


def git_files(repo, directory):
    out = subprocess.run(["git", "-C", repo, "ls-tree", "--name-only", "HEAD", directory + "/"],
                         check=True, capture_output=True, text=True).stdout.split()
    return [f for f in out if f.endswith(".go") and not f.endswith("_test.go")
            and "zz_generated" not in f and "generated.pb" not in f and "swagger_doc" not in f]


def git_show(repo, path):
    return subprocess.run(["git", "-C", repo, "show", "HEAD:" + path], check=True,
                          capture_output=True, text=True).stdout


def strip_comments(src):
    src = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
    return re.sub(r"//[^\n]*", "", src)


class Package:
    def __init__(self, name):
        self.name = name
        self.structs = {}  # name -> [(go field type, tag, imports)]
        self.aliases = {}  # name -> (go type, imports)
        self.custom = set()  # names with a MarshalJSON


def load(repos):
    packages = {}
    for name, (index, directory) in PACKAGES.items():
        pkg = Package(name)
        for path in git_files(repos[index], directory):
            raw = git_show(repos[index], path)
            for m in re.finditer(r"^func \(\w+ \*?(\w+)\) MarshalJSON\(", raw, flags=re.M):
                pkg.custom.add(m.group(1))
            src = strip_comments(raw)
            imports = {}
            for block in re.findall(r"^import \((.*?)\)", src, flags=re.S | re.M):
                for line in block.splitlines():
                    m = re.match(r'\s*(\w+)?\s*"([^"]+)"', line)
                    if m:
                        path_ = m.group(2)
                        imports[m.group(1) or path_.rsplit("/", 1)[-1]] = path_
            for m in re.finditer(r'^import (\w+)? ?"([^"]+)"', src, flags=re.M):
                imports[m.group(1) or m.group(2).rsplit("/", 1)[-1]] = m.group(2)
            for m in re.finditer(r"^type (\w+) struct ?\{\}", src, flags=re.M):
                pkg.structs[m.group(1)] = []
            for m in re.finditer(r"^type (\w+) struct \{\n(.*?)^\}", src, flags=re.S | re.M):
                fields = []
                for line in m.group(2).splitlines():
                    line = line.strip()
                    if not line:
                        continue
                    fm = re.match(r"^(?:(\w+)\s+)?([^`\s]+)\s*(?:`(.*)`)?$", line)
                    if not fm:
                        raise SystemExit(f"{path}: {m.group(1)}: cannot read field {line!r}")
                    tag = re.search(r'json:"([^"]*)"', fm.group(3) or "")
                    fields.append((fm.group(1), fm.group(2), tag.group(1) if tag else None, imports))
                pkg.structs[m.group(1)] = fields
            for m in re.finditer(r"^type (\w+) =? ?([^\s{]+)\s*$", src, flags=re.M):
                pkg.aliases[m.group(1)] = (m.group(2), imports)
            for block in re.findall(r"^type \((.*?)^\)", src, flags=re.S | re.M):
                for line in block.splitlines():
                    am = re.match(r"\s*(\w+) =? ?([^\s{]+)\s*$", line)
                    if am:
                        pkg.aliases[am.group(1)] = (am.group(2), imports)
        packages[name] = pkg
    return packages


class Gen:
    def __init__(self, packages):
        self.packages = packages
        self.ids = {}  # (pkg, struct) -> index
        self.order = []  # (pkg, struct)
        self.fields = {}  # index -> [(json, omitempty, container, shape)]

    def resolve_name(self, pkg, name, imports):
        """A named type -> (kind, detail) with kind in Scalar/Bytes/Time/Opaque/Raw/Struct/
        Slice/Map/Ptr (the last three with the element's (kind, detail))."""
        if "." in name:
            alias, local = name.split(".", 1)
            path = imports.get(alias)
            if path is None:
                raise SystemExit(f"{pkg}: unknown import {alias} in {name}")
            if (path, local) in FOREIGN:
                return FOREIGN[(path, local)]
            if path not in IMPORTS:
                return ("Opaque", None)
            return self.resolve_name(IMPORTS[path], local, {})
        if name in SCALARS:
            return ("Scalar", SCALARS[name])
        if (pkg, name) in TIME:
            return ("Time", None)
        p = self.packages[pkg]
        if name in p.custom:
            return ("Opaque", None)
        if name in p.structs:
            return ("Struct", (pkg, name))
        if name in p.aliases:
            target, imports_ = p.aliases[name]
            return self.resolve(pkg, target, imports_)
        raise SystemExit(f"{pkg}: unknown type {name}")

    def resolve(self, pkg, ty, imports):
        if ty.startswith("*"):
            return ("Ptr", self.resolve(pkg, ty[1:], imports))
        if ty == "[]byte":
            return ("Bytes", None)
        if ty.startswith("[]"):
            return ("Slice", self.resolve(pkg, ty[2:], imports))
        if ty.startswith("map["):
            depth, i = 0, 3
            while True:
                depth += {"[": 1, "]": -1}.get(ty[i], 0)
                if depth == 0:
                    break
                i += 1
            return ("Map", self.resolve(pkg, ty[i + 1:], imports))
        return self.resolve_name(pkg, ty, imports)

    def root_id(self, key):
        """The kind's struct as an object's data holds it: without `metadata`, which is typed
        beside the data (the struct itself, with it, stays for where it nests: a StatefulSet's
        claim templates)."""
        fields = [f for f in self.fields[self.struct_id(key)] if f[0] != "metadata"]
        root = (key[0], key[1] + " (an object's data)")
        if root not in self.ids:
            self.ids[root] = len(self.order)
            self.order.append(root)
            self.fields[self.ids[root]] = fields
        return self.ids[root]

    def struct_id(self, key):
        if key not in self.ids:
            self.ids[key] = len(self.order)
            self.order.append(key)
            self.fields[self.ids[key]] = None
            self.fields[self.ids[key]] = self.struct_fields(key)
        return self.ids[key]

    def struct_fields(self, key):
        pkg, name = key
        out = []
        for fname, fty, tag, imports in self.packages[pkg].structs[name]:
            parts = (tag or "").split(",")
            json_name = parts[0]
            if json_name == "-":
                continue
            if fname is None or "inline" in parts[1:]:
                if json_name == "" :
                    # Embedded (inline): its fields are the parent's. TypeMeta's apiVersion and
                    # kind are the object's own, never walked.
                    kind, detail = self.resolve(pkg, fty.lstrip("*"), imports)
                    if kind != "Struct":
                        raise SystemExit(f"{pkg}.{name}: inline {fty} is not a struct")
                    if detail == ("meta/v1", "TypeMeta"):
                        continue
                    out.extend(self.struct_fields(detail))
                    continue
            if not json_name:
                json_name = fname
            shape = self.shape(pkg, fty, imports)
            omitempty = "omitempty" in parts[1:]
            if "omitzero" in parts[1:]:
                # Go 1.24's `omitzero` leaves a zero value out: for a time, as a nil pointer
                # with `omitempty` is (ObjectMeta.creationTimestamp since Kubernetes 1.34).
                if shape != "Go::Value(Shape::Time)":
                    raise SystemExit(f"{pkg}.{name}.{json_name}: omitzero on {fty} is not modelled")
                shape, omitempty = "Go::Ptr(Shape::Time)", True
            out.append((json_name, omitempty, shape))
        out.sort()
        names = [f[0] for f in out]
        if len(set(names)) != len(names):
            raise SystemExit(f"{pkg}.{name}: two fields encode as one JSON name")
        return out

    def element(self, resolved):
        kind, detail = resolved
        if kind == "Struct":
            return f"Shape::Struct({self.struct_id(detail)})"
        if kind == "Scalar":
            return f"Shape::Scalar(Scalar::{detail})"
        if kind in ("Slice", "Map", "Ptr"):
            # Nested containers ([][]string, map[string][]string) are kept as they are.
            return "Shape::Opaque"
        return f"Shape::{kind}"

    def shape(self, pkg, ty, imports):
        kind, detail = self.resolve(pkg, ty, imports)
        if kind in ("Slice", "Map", "Ptr"):
            return f"Go::{kind}({self.element(detail)})"
        return f"Go::Value({self.element((kind, detail))})"


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    repos = sys.argv[1:]
    heads = [subprocess.run(["git", "-C", r, "rev-parse", "HEAD"], check=True, capture_output=True,
                            text=True).stdout.strip() for r in repos]
    gen = Gen(load(repos))
    roots = [(g, k, gen.root_id((p, s))) for g, k, p, s in ROOTS]
    print("// @generated by model-apiserver/tools/go_types.py from kubernetes/api "
          f"{heads[0]}, kubernetes/apimachinery {heads[1]} and kubernetes/apiextensions-apiserver "
          f"{heads[2]}. Do not edit.")
    print()
    print("use super::{Field, Go, Scalar, Shape};")
    print()
    print("/// The served kinds' Go structs, as an object's data holds them (no `metadata`):")
    print("/// (group, kind, struct).")
    print("pub(super) static ROOTS: &[(&str, &str, u16)] = &[")
    for g, k, i in roots:
        print(f'    ("{g}", "{k}", {i}),')
    print("];")
    print()
    print("/// Each struct's fields, sorted by JSON name; a struct's index is its place here.")
    print("pub(super) static STRUCTS: &[&[Field]] = &[")
    for i, (pkg, name) in enumerate(gen.order):
        print(f"    // {i}: {pkg}.{name}")
        print("    &[")
        for json_name, omitempty, shape in gen.fields[i]:
            print(f'        Field {{ json: "{json_name}", omitempty: {str(omitempty).lower()}, go: {shape} }},')
        print("    ],")
    print("];")


if __name__ == "__main__":
    main()
