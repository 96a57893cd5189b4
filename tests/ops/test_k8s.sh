#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# dist/kubernetes/ validated offline against the Kubernetes OpenAPI schema:
# kubernetes-models' validators (npm, the version pinned in
# tests/ops/k8s/package-lock.json, installed once into
# /var/cache/flakewire-test/npm-k8s-HASH) check types, formats, enums and
# required fields, and tests/ops/k8s/validate.mjs adds that no field is
# unknown to the schema. `kubectl --dry-run=client` validates nothing without
# an API server. Also: kustomization.yaml lists every manifest, a misspelt
# field and a wrong type are caught (the check can fail), and the pods'
# probes, ports and paths agree with the configuration and the image.
# Under CI=true a missing node or npm is a failure.
set -u
: "${FW_SRC:?}"
K8S=$FW_SRC/dist/kubernetes
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$FW_SRC/tests/ops/lib.sh" # need
need node nodejs
need npm npm

CACHE=${FW_NPM_CACHE:-/var/cache/flakewire-test}
KEY=$(cat "$FW_SRC/tests/ops/k8s/package.json" "$FW_SRC/tests/ops/k8s/package-lock.json" | sha256sum | cut -c1-16)
MODS=$CACHE/npm-k8s-$KEY
if [ ! -f "$MODS/.complete" ]; then
	mkdir -p "$CACHE"
	find "$CACHE" -maxdepth 1 \( -name 'npm-k8s-*' -o -name '.npm-k8s-*' \) ! -name "npm-k8s-$KEY" -exec rm -rf {} +
	NEW=$(mktemp -d "$CACHE/.npm-k8s-XXXXXX")
	cp "$FW_SRC/tests/ops/k8s/package.json" "$FW_SRC/tests/ops/k8s/package-lock.json" "$NEW/"
	if ! (cd "$NEW" && timeout 300 npm ci --no-audit --no-fund --ignore-scripts >npm.log 2>&1); then
		tail -n 15 "$NEW/npm.log" >&2
		rm -rf "$NEW"
		[ "${CI:-}" = true ] && fail "npm ci of tests/ops/k8s (kubernetes-models) failed"
		echo "SKIP: npm ci of tests/ops/k8s failed (no npm registry?)"
		exit 77
	fi
	touch "$NEW/.complete"
	mv -T "$NEW" "$MODS" 2>/dev/null || rm -rf "$NEW"
fi
TMP=$(mktemp -d /tmp/fw-k8s.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
# the validator resolves its packages from its own directory
VALIDATE=$MODS/validate-$$.mjs
cp "$FW_SRC/tests/ops/k8s/validate.mjs" "$VALIDATE"
trap 'rm -rf "$TMP" "$VALIDATE"' EXIT
validate() { node "$VALIDATE" "$@"; }

# 1. every manifest against the schema, none unknown to kustomization.yaml
mapfile -t files < <(find "$K8S" -maxdepth 1 -name '*.yaml' ! -name kustomization.yaml | sort)
[ ${#files[@]} -ge 7 ] || fail "only ${#files[@]} manifests in $K8S"
validate "${files[@]}" || fail "dist/kubernetes/ does not validate"
listed=$(sed -n 's/^  - \([a-z0-9-]*\.yaml\)$/\1/p' "$K8S/kustomization.yaml" | sort)
present=$(for f in "${files[@]}"; do basename "$f"; done | sort)
[ "$listed" = "$present" ] || fail "kustomization.yaml lists: $(echo $listed); present: $(echo $present)"

# 2. the check can fail: a misspelt field, a wrong type, a wrong enum
sed 's/readinessProbe:/readinesProbe:/' "$K8S/flakesock-statefulset.yaml" >"$TMP/typo.yaml"
out=$(validate "$TMP/typo.yaml") && fail "a misspelt readinessProbe passed"
grep -q 'readinesProbe: not a field of the schema' <<<"$out" || fail "typo: $out"
sed 's/cpu: 250m/cpu: lots/' "$K8S/flakesock-statefulset.yaml" >"$TMP/type.yaml"
validate "$TMP/type.yaml" >/dev/null && fail "cpu: lots passed"
sed 's/protocol: UDP/protocol: QUIC/' "$K8S/flakesock-service.yaml" >"$TMP/enum.yaml"
validate "$TMP/enum.yaml" >/dev/null && fail "protocol: QUIC passed"
echo "dist/kubernetes/: ${#files[@]} files valid against kubernetes-models $(sed -n 's/.*"kubernetes-models": "\(.*\)".*/\1/p' "$FW_SRC/tests/ops/k8s/package.json"); a typo, a type and an enum caught"

# 3. what the manifests say agrees with the configuration and the image
/usr/bin/python3 - "$K8S" "$FW_SRC/scripts/image.sh" <<'PY' || fail "the manifests disagree with themselves or the image"
import configparser, re, sys, yaml
k8s, image_sh = sys.argv[1], open(sys.argv[2]).read()
def docs(name):
    return [d for d in yaml.safe_load_all(open(f"{k8s}/{name}")) if d]
def ini(name):
    c = configparser.ConfigParser()
    c.read_string(docs(name)[0]["data"]["flakewire.ini"])
    return c
errors = []
def check(cond, what):
    if not cond:
        errors.append(what)

sts = docs("flakesock-statefulset.yaml")[0]
pod = sts["spec"]["template"]["spec"]
c = pod["containers"][0]
conf = ini("flakesock-config.yaml")
port = int(conf["metrics"]["listen"].rsplit(":", 1)[1])
ports = {p["name"]: p["containerPort"] for p in c["ports"]}
check(ports["metrics"] == port, f"metrics port {ports['metrics']} != [metrics] listen {port}")
check(conf["metrics"]["listen"].startswith("0.0.0.0:"), "flakesock's metrics must listen on the pod address")
check(c["readinessProbe"]["httpGet"]["path"] == "/readyz", "readiness is not /readyz")
check(c["livenessProbe"]["httpGet"]["path"] == "/healthz", "liveness is not /healthz")
check(conf["fleet"]["identity"] == "env:POD_NAME", "identity is not env:POD_NAME")
env = {e["name"]: e for e in c["env"]}
check(env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name", "POD_NAME not from metadata.name")
sc, psc = c["securityContext"], pod["securityContext"]
check(sc["capabilities"]["drop"] == ["ALL"] and "add" not in sc["capabilities"], "flakesock keeps a capability")
check(sc["readOnlyRootFilesystem"] and not sc["allowPrivilegeEscalation"], "root not read-only")
check(psc["runAsNonRoot"] and psc["runAsUser"] == 10001, "not user 10001")
check("--user 10001:10001" in image_sh, "the image's user is not 10001")
mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
check(mounts["state"] == "/var/lib/flakewire", "the state volume is not /var/lib/flakewire")
check("state.file=/var/lib/flakewire/mark" in image_sh and "fleet.cache_file=/var/lib/flakewire/fleet" in image_sh,
      "the image's entry point does not keep the state on the volume")
check(sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "state", "no state claim")
check(pod["terminationGracePeriodSeconds"] <= 30, "grace period above 30 s")
svc = [d for d in docs("flakesock-service.yaml") if d["metadata"]["name"] == sts["spec"]["serviceName"]]
check(svc and svc[0]["spec"]["clusterIP"] == "None", "the StatefulSet's Service is not headless")
pdb = docs("flakesock-pdb.yaml")[0]
check(pdb["spec"]["selector"]["matchLabels"].items() <= sts["spec"]["template"]["metadata"]["labels"].items(),
      "the PodDisruptionBudget selects no flakesock pod")

ds = docs("flakewire-afxdp-daemonset.yaml")[0]
dpod = ds["spec"]["template"]["spec"]
dc = dpod["containers"][0]
dconf = ini("flakewire-afxdp-config.yaml")
check(dpod["hostNetwork"] is True, "the DaemonSet is not on the host network")
check(dconf["port0"]["mode"] == "af_xdp", "the DaemonSet's port is not af_xdp")
check(set(dc["securityContext"]["capabilities"]["add"]) == {"SYS_ADMIN", "NET_ADMIN", "NET_RAW", "IPC_LOCK"},
      "AF_XDP capabilities differ")
dmounts = {m["name"]: m["mountPath"] for m in dc["volumeMounts"]}
check(dmounts.get("bpffs") == "/sys/fs/bpf", "no bpffs")
dport = int(dconf["metrics"]["listen"].rsplit(":", 1)[1])
for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
    g = dc[probe]["httpGet"]
    check(g["path"] == path and g["port"] == dport and g["host"] == dconf["metrics"]["listen"].rsplit(":", 1)[0],
          f"the DaemonSet's {probe} does not reach [metrics] listen")
check(dconf["fleet"]["identity"] == "env:NODE_NAME", "the DaemonSet's identity is not env:NODE_NAME")
check(ds["spec"]["updateStrategy"]["rollingUpdate"]["maxSurge"] == 0, "the DaemonSet may surge two pods on a node")
for e in errors:
    print("  " + e)
sys.exit(1 if errors else 0)
PY
echo "probes, ports, identity, security context and state paths agree with the configuration and the image"
