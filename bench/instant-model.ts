// The instant model in a process of its own (bench:calls starts it). Served from the callers'
// process, every stub turn waited on a JS thread that 200 simulated callers keep busy, and that
// wait was counted as the runtime's overhead. Exits when its parent closes stdin or on SIGTERM.
import { startInstantModel } from './stub-engines.ts';

const model = await startInstantModel();
const stop = () => void model.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.stdin.on('end', stop).resume();
console.log(JSON.stringify({ url: model.url }));
