// Worker threads start from plain JavaScript: on Node 20 an --import loader does not reach a
// worker's own entry file, so register tsx here and then load the TypeScript worker.
import { register } from 'tsx/esm/api';

register();
await import('./recording-worker.ts');
