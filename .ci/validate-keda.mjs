// Validates every KEDA ScaledObject in the YAML files given against KEDA's CRD schema
// (@kubernetes-models/keda). Exits non-zero, naming the object and the error, on the first invalid one.
// Run it from a directory whose node_modules holds @kubernetes-models/keda and js-yaml (.ci/validate-deploy).
import fs from "node:fs";
import yaml from "js-yaml";
import { ScaledObject } from "@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject";

let checked = 0;
for (const file of process.argv.slice(2)) {
  for (const doc of yaml.loadAll(fs.readFileSync(file, "utf8"))) {
    if (!doc || doc.kind !== "ScaledObject") continue;
    const name = `${file}: ScaledObject ${doc.metadata?.name}`;
    try {
      new ScaledObject(doc).validate();
    } catch (e) {
      console.error(`${name}: ${e.message}`);
      process.exit(1);
    }
    for (const trigger of doc.spec.triggers) {
      if (trigger.type !== "nats-jetstream") continue;
      for (const key of ["natsServerMonitoringEndpoint", "account", "stream", "consumer", "lagThreshold"]) {
        if (!trigger.metadata?.[key]) {
          console.error(`${name}: its nats-jetstream trigger lacks ${key}`);
          process.exit(1);
        }
      }
    }
    checked++;
  }
}
if (checked === 0) {
  console.error("no ScaledObject found");
  process.exit(1);
}
console.log(`KEDA: ${checked} ScaledObject(s) valid`);
