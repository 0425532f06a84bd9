// Entry point of `npm start`.
import cluster from 'node:cluster';
import { startService } from './app.ts';
import { announceReady, doesSetup, superviseWorkers } from './cluster/supervisor.ts';
import { ConfigError, loadConfig } from './config.ts';
import { AgentsFileError } from './agents/file.ts';
import { createLogger } from './logger.ts';
import { SecretKeyError } from './secrets/sealed.ts';

async function main(): Promise<void> {
  const config = loadConfig();
  if (config.workers > 1 && cluster.isPrimary) {
    superviseWorkers(config, createLogger(config.logLevel));
    return;
  }
  // The first call's greeting should not wait for the voice's worker threads to start.
  const service = await startService({ config, warmSpeech: true, setup: doesSetup() });
  if (service.generatedKey) {
    // Printed once, on the start that created it; later starts only name the file.
    process.stdout.write(
      `\nAPI_KEYS is unset, so an API key was generated for organization "default" and stored in ${service.generatedKey.file}:\n\n    ${service.generatedKey.key}\n\nUse it as: Authorization: Bearer <key>\n\n`,
    );
  }
  service.logger.info({ url: service.url, public_url: service.publicUrl }, 'voice-call runtime ready');
  announceReady();

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    service.logger.info({ signal }, 'shutting down');
    service.close().then(
      () => process.exit(0),
      (error: unknown) => {
        service.logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof AgentsFileError || error instanceof SecretKeyError) {
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
