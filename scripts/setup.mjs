#!/usr/bin/env node
// One idempotent set-up behind `npm start` and `npm test`: system packages (apt, when root),
// node modules (npm ci), native builds. Each step says what it does, and skips itself when
// its work is already done, so a second run costs well under a second.
// Only Node built-ins here: this runs before node_modules exists.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

// Each part of the product that needs set-up owns one module in scripts/setup.d/, run in
// name order. A module may export:
//   apt:   [[debianPackage, why], ...]  installed before node modules
//   testApt: the same, needed only by the tests (a browser, a database server): left out with
//          --runtime (npm start, the Dockerfile)
//   steps: [{ name, run(ctx) }]          run after node modules, each idempotent
// ctx = { root, say, run, buildEnv }.
const parts = [];
const partsDir = join(root, 'scripts', 'setup.d');
if (existsSync(partsDir)) {
  for (const file of readdirSync(partsDir)
    .filter((f) => f.endsWith('.mjs'))
    .sort()) {
    parts.push({ file, ...(await import(pathToFileURL(join(partsDir, file)).href)) });
  }
}

const say = (msg) => process.stdout.write(`[setup] ${msg}\n`);

function run(cmd, args, env = process.env) {
  say(`$ ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env });
  if (r.status !== 0) {
    say(`failed: ${cmd} ${args.join(' ')} (exit ${r.status ?? r.signal})`);
    process.exit(r.status ?? 1);
  }
}

function missingAptPackages(names) {
  return names.filter((name) => {
    try {
      const status = execFileSync('dpkg-query', ['-W', '-f=${Status}', name], {
        stdio: ['ignore', 'pipe', 'ignore'],
      }).toString();
      return !status.includes('install ok installed');
    } catch {
      return true;
    }
  });
}

const runtimeOnly = process.argv.includes('--runtime');

function aptStep() {
  const wanted = [
    ...new Set(
      parts.flatMap((p) => [...(p.apt ?? []), ...(runtimeOnly ? [] : (p.testApt ?? []))].map(([name]) => name)),
    ),
  ];
  if (wanted.length === 0) return;
  let hasDpkg = true;
  try {
    execFileSync('dpkg-query', ['--version'], { stdio: 'ignore' });
  } catch {
    hasDpkg = false;
  }
  if (!hasDpkg) {
    say(`no dpkg here: install these yourself if missing: ${wanted.join(' ')}`);
    return;
  }
  const missing = missingAptPackages(wanted);
  if (missing.length === 0) {
    say('system packages: all present');
    return;
  }
  if (process.getuid?.() !== 0) {
    say(
      `system packages missing and not root, skipping: ${missing.join(' ')} (sudo apt-get install ${missing.join(' ')})`,
    );
    return;
  }
  say(`installing system packages: ${missing.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  run('apt-get', ['update', '-q'], env);
  run('apt-get', ['install', '-y', '-q', '--no-install-recommends', ...missing], env);
}

// Build native addons from source against local headers only; never download them.
function onPath(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

function buildEnv() {
  const env = { ...process.env, npm_config_build_from_source: 'true' };
  const prefix = dirname(dirname(process.execPath));
  if (existsSync(join(prefix, 'include', 'node', 'node.h'))) env.npm_config_nodedir = prefix;
  // Through the compiler cache (setup.d/10-build-cache.mjs) unless the caller chose compilers: paths under
  // the checkout are hashed relative to it, and the build directory is left out of the hash, so that a
  // new clone's identical sources hit.
  if (onPath('ccache') && env.CC === undefined && env.CXX === undefined) {
    Object.assign(env, { CC: 'ccache gcc', CXX: 'ccache g++', CCACHE_BASEDIR: root, CCACHE_NOHASHDIR: 'true' });
  }
  return env;
}

function npmStep() {
  const lock = join(root, 'package-lock.json');
  const stampFile = join(root, 'node_modules', '.setup-stamp');
  const stamp = createHash('sha256').update(readFileSync(lock)).update(process.version).digest('hex');
  if (existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp) {
    say('node modules: up to date');
    return;
  }
  say('node modules: installing from package-lock.json (native addons build from source)');
  run('npm', ['ci', '--no-fund', '--no-audit'], buildEnv());
  writeFileSync(stampFile, stamp);
}

async function partSteps() {
  const ctx = { root, say, run, buildEnv };
  for (const part of parts) {
    for (const step of part.steps ?? []) {
      await step.run(ctx);
    }
  }
}

const started = Date.now();
aptStep();
npmStep();
await partSteps();
say(`done in ${Date.now() - started} ms`);
