// Builds the front-end files the service serves into service/static/vendor/ (committed).
//
//   cd frontend && npm ci && node build.mjs            (what `make static` runs)
//   node build.mjs --out DIR                            (the same files into DIR: the bundle test)
//
// Two kinds of output, both deterministic (same lockfile and sources, same bytes):
//   COPIES   prebuilt files of a pinned package, copied byte for byte. Swagger UI comes this way:
//            swagger-ui-dist's swagger-ui-bundle.js is the build the Swagger UI project publishes
//            and tests, with its dependencies inside; re-bundling it from the `swagger-ui` package
//            would pull a hundred more packages for a file nobody else runs.
//   BUNDLES  our own sources under src/, bundled by esbuild with the packages they import (the
//            API docs' initializer; the learner pages' script, with CodeMirror, and stylesheet;
//            the element and number helpers as ES modules that the dashboard imports).
// manifest.json lists every file with where it came from and its SHA-256.
//
// The build refuses to run on a node_modules that does not match package-lock.json (run npm ci),
// and it only ever replaces a folder that it made (one holding its manifest.json) or an empty one.

import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const DEFAULT_OUT = resolve(HERE, "..", "service", "static", "vendor");
const MANIFEST = "manifest.json";

// Output path (under the output folder) -> [package, file in that package].
const COPIES = {
  "swagger-ui/swagger-ui-bundle.js": ["swagger-ui-dist", "swagger-ui-bundle.js"],
  "swagger-ui/swagger-ui-bundle.js.LICENSE.txt": ["swagger-ui-dist", "swagger-ui-bundle.js.LICENSE.txt"],
  "swagger-ui/swagger-ui.css": ["swagger-ui-dist", "swagger-ui.css"],
  "swagger-ui/LICENSE": ["swagger-ui-dist", "LICENSE"],
  "swagger-ui/NOTICE": ["swagger-ui-dist", "NOTICE"],
};

// Output path -> esbuild options for one entry point under src/.
const BUNDLES = {
  "api-docs.js": { entryPoints: ["src/api-docs.js"], format: "iife", minify: false },
  // The learner pages (/learn, /learn/{slug}): CodeMirror 6, markdown-it and DOMPurify with the page code.
  "learn/learn.js": { entryPoints: ["src/learn/main.js"], format: "iife", minify: true },
  "learn/learn.css": { entryPoints: ["src/learn/learn.css"], minify: false },
  // What the learner pages and the dashboard share, for the dashboard: its files are plain ES modules
  // (service/static/admin, no build step) that import these from /vendor/shared/. The learner bundle
  // builds the same sources in, so each helper has one source file and both pages run its code.
  "shared/dom.js": { entryPoints: ["src/dom.js"], format: "esm", minify: false },
  "shared/format.js": { entryPoints: ["src/format.js"], format: "esm", minify: false },
  // The dashboard's authoring view: the learner pages' CodeMirror editor, with TOML and problem markers.
  "authoring/editor.js": { entryPoints: ["src/authoring/editor.js"], format: "esm", minify: true },
};

function fail(message) {
  console.error(`build.mjs: ${message}`);
  process.exit(1);
}

function parseArgs(argv) {
  const args = { out: DEFAULT_OUT };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--out" && i + 1 < argv.length) args.out = resolve(argv[++i]);
    else fail(`unknown argument ${argv[i]} (usage: node build.mjs [--out DIR])`);
  }
  return args;
}

// Every installed package must be the version package-lock.json names.
function checkInstalled() {
  const lock = JSON.parse(readFileSync(join(HERE, "package-lock.json"), "utf8"));
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (path === "" || entry.optional) continue; // optional: esbuild's binaries for other platforms
    const manifest = join(HERE, path, "package.json");
    const installed = existsSync(manifest) ? JSON.parse(readFileSync(manifest, "utf8")).version : null;
    if (installed !== entry.version) {
      fail(`${path} is ${installed ?? "missing"}, package-lock.json says ${entry.version}: run npm ci in frontend/`);
    }
  }
  return lock;
}

function sources(options) {
  return options.entryPoints.map((entry) => `frontend/${entry}`).join(", ");
}

function versionOf(lock, name) {
  return lock.packages[`node_modules/${name}`].version;
}

// The output folder is replaced whole: only one this script made (or an empty or missing one).
function refuseForeign(out) {
  if (existsSync(out) && readdirSync(out).length > 0 && !existsSync(join(out, MANIFEST))) {
    fail(`${out} is not empty and has no ${MANIFEST}: not a folder this build made, left alone`);
  }
}

function resetOut(out) {
  refuseForeign(out);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
}

function write(out, path, bytes, files, from) {
  const target = join(out, path);
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, bytes, { mode: 0o644 });
  files[path] = { from, sha256: createHash("sha256").update(bytes).digest("hex") };
}

async function main() {
  const { out } = parseArgs(process.argv.slice(2));
  refuseForeign(out);
  const lock = checkInstalled();
  const esbuild = await import("esbuild");
  resetOut(out);
  const files = {};

  for (const [path, [pkg, file]] of Object.entries(COPIES)) {
    const bytes = readFileSync(join(HERE, "node_modules", pkg, file));
    write(out, path, bytes, files, `${pkg}@${versionOf(lock, pkg)}/${file}`);
  }

  for (const [path, options] of Object.entries(BUNDLES)) {
    const result = await esbuild.build({
      absWorkingDir: HERE, // paths in the output are relative to frontend/, wherever it is
      bundle: true,
      write: false,
      outfile: join(out, path),
      target: "es2020",
      charset: "utf8",
      legalComments: "inline",
      sourcemap: false,
      logLevel: "warning",
      banner: { js: `// Built by frontend/build.mjs (make static) from ${sources(options)}: edit the source, not this file.` },
      ...options,
    });
    if (result.outputFiles.length !== 1) fail(`${path}: esbuild wrote ${result.outputFiles.length} files, expected 1`);
    write(out, path, result.outputFiles[0].contents, files, `${sources(options)} (esbuild@${esbuild.version})`);
  }

  const manifest = {
    note: "Generated by frontend/build.mjs (make static) from frontend/package-lock.json: do not edit.",
    files: Object.fromEntries(Object.keys(files).sort().map((path) => [path, files[path]])),
  };
  writeFileSync(join(out, MANIFEST), JSON.stringify(manifest, null, 2) + "\n", { mode: 0o644 });
  console.log(`build.mjs: ${Object.keys(files).length} files and ${MANIFEST} in ${relative(process.cwd(), out) || "."}`);
}

await main();
