// npm run bench:profile-top -- FILE.cpuprofile [N]: the N functions with the most self time in
// a `node --cpu-prof` profile, to read a bench:calls run that missed a bar.
import { readFileSync } from 'node:fs';
import { z } from 'zod';

const Profile = z.object({
  nodes: z.array(
    z.object({
      id: z.number(),
      callFrame: z.object({ functionName: z.string(), url: z.string(), lineNumber: z.number() }),
    }),
  ),
  samples: z.array(z.number()),
  timeDeltas: z.array(z.number()),
});
const [file, n] = z
  .tuple([z.string(), z.coerce.number().int().positive().default(25)])
  .parse([process.argv[2], process.argv[3] ?? undefined]);
const profile = Profile.parse(JSON.parse(readFileSync(file, 'utf8')));
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const self = new Map<string, number>();
let total = 0;
profile.samples.forEach((id, i) => {
  const frame = byId.get(id)!.callFrame;
  const where = frame.url.replace(/^.*\/(node_modules|src|bench|test)\//, '$1/');
  const key = `${frame.functionName || '(anonymous)'} ${where}:${frame.lineNumber + 1}`;
  const dt = profile.timeDeltas[i] ?? 0;
  self.set(key, (self.get(key) ?? 0) + dt);
  total += dt;
});
const rows = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, n);
console.log(`| self % | self ms | function |\n|---|---|---|`);
for (const [key, us] of rows)
  console.log(`| ${((us / total) * 100).toFixed(1)} | ${(us / 1000).toFixed(0)} | ${key.replaceAll('|', '\\|')} |`);
