// The box tests seal stored secrets with: a fixed key, so a test's rows are the same every run.
import { SecretBox } from '../../src/secrets/sealed.ts';

export const TEST_SECRETS_KEY = Buffer.alloc(32, 7);
export const testSecretBox = (): SecretBox => new SecretBox(TEST_SECRETS_KEY);
