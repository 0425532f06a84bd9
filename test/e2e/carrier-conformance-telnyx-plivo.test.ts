// Telnyx and Plivo under the carrier conformance suite (test/carriers/conformance-suite.ts).
import { conformanceSuite } from '../carriers/conformance-suite.ts';
import { CONFORMANCE_GROUPS } from '../carriers/drivers.ts';

conformanceSuite(CONFORMANCE_GROUPS.telnyxPlivo);
