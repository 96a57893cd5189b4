// SPDX-License-Identifier: BSD-3-Clause
// Validates Kubernetes YAML offline against the Kubernetes OpenAPI schema, as
// compiled into JSON-schema validators by the npm package kubernetes-models
// (version pinned in package.json beside this file; its schema is the
// Kubernetes API of that release). Two checks per object:
//   1. the schema: types, formats, enums, required fields (the package's
//      validate());
//   2. no unknown field: the schema's validators only look at the fields they
//      know, so every object is wrapped in a Proxy that records which keys the
//      validator read; a key it never read (and no map iteration over its
//      object) is a field the schema does not have, such as a misspelt
//      "readinesProbe" that the API server would drop with a warning.
// usage: node validate.mjs FILE.yaml...   exit 0 when every object passes,
// 1 naming each error (file, object, path)
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

// the kinds dist/kubernetes/ may hold (a typo in apiVersion or kind is an error)
const kinds = new Set(["v1/ConfigMap", "v1/Service", "v1/Namespace", "v1/Pod", "v1/ServiceAccount",
	"apps/v1/StatefulSet", "apps/v1/DaemonSet", "policy/v1/PodDisruptionBudget",
	"networking.k8s.io/v1/NetworkPolicy"]);

// track(value): a deep proxy of value and the record of what was read
function track(value, path, seen) {
	if (value === null || typeof value !== "object") return value;
	const rec = { value, path, read: new Set(), iterated: false };
	seen.push(rec);
	const kids = Array.isArray(value) ? value.map((v, i) => track(v, `${path}/${i}`, seen))
		: Object.fromEntries(Object.entries(value).map(([k, v]) => [k, track(v, `${path}/${k}`, seen)]));
	return new Proxy(kids, {
		get(t, k) { if (typeof k === "string") rec.read.add(k); return t[k]; },
		has(t, k) { if (typeof k === "string") rec.read.add(k); return k in t; },
		ownKeys(t) { rec.iterated = true; return Reflect.ownKeys(t); },
		getOwnPropertyDescriptor(t, k) { return Reflect.getOwnPropertyDescriptor(t, k); },
	});
}

let failed = 0, checked = 0;
for (const file of process.argv.slice(2)) {
	const docs = parseAllDocuments(readFileSync(file, "utf8"));
	for (const doc of docs) {
		if (doc.errors.length) {
			console.log(`${file}: YAML: ${doc.errors[0].message}`);
			failed++;
			continue;
		}
		const obj = doc.toJS();
		if (obj === null) continue;
		const what = `${file}: ${obj.kind} ${obj.metadata?.name ?? "(no name)"}`;
		if (!kinds.has(`${obj.apiVersion}/${obj.kind}`)) {
			console.log(`${what}: ${obj.apiVersion} ${obj.kind} is not a kind this check knows`);
			failed++;
			continue;
		}
		const { validate } = await import(`kubernetes-models/_schemas/${schemaName(obj.apiVersion, obj.kind)}`);
		const seen = [];
		const ok = validate(track(obj, "", seen));
		checked++;
		if (!ok) {
			for (const e of validate.errors)
				console.log(`${what}: ${e.instancePath || "/"} ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`);
			failed++;
			continue;
		}
		const unknown = [];
		for (const r of seen) {
			if (Array.isArray(r.value) || r.iterated) continue;
			for (const k of Object.keys(r.value)) {
				const p = `${r.path}/${k}`;
				// the fields under an unknown one are not reported again
				if (!r.read.has(k) && !unknown.some((u) => p.startsWith(u + "/"))) unknown.push(p);
			}
		}
		if (unknown.length) {
			for (const u of unknown) console.log(`${what}: ${u}: not a field of the schema`);
			failed++;
		}
	}
}

// IoK8sApiAppsV1StatefulSet and the like: the package's own schema names
function schemaName(apiVersion, kind) {
	const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["core", apiVersion];
	const g = group.replace(/\.k8s\.io$/, "").split(".").map(cap).join("");
	return `IoK8sApi${cap(g)}${cap(version)}${kind}`;
}
function cap(s) { return s.charAt(0).toUpperCase() + s.slice(1); }

console.log(`${checked} objects checked, ${failed} with errors`);
process.exit(failed ? 1 : 0);
