// Debian's baresip (1.0.0) as a phone on 127.0.0.1: the config and accounts files of one home folder. Its microphone
// is a WAV file (aufile: mono, 16-bit, at the codec's rate; the call is hung up when the file ends); it plays what it
// hears into `aubridge`, which paces itself (ALSA's null device works too, but baresip's player thread spins a whole
// core on it). docs/sip-notes.md says how each setting was found.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface BaresipHome {
  /** The folder baresip is started with (`-f`). */
  home: string;
  host: string;
  /** Its SIP port. */
  port: number;
  /** The WAV it plays as its microphone. */
  microphone: string;
  /** The audio rate of its microphone and player: 8000 for G.711, 16000 for G.722. */
  sampleRate: 8000 | 16000;
  /** Its RTP port range, `low-high`. */
  rtpPorts: string;
  /** Codecs it offers, in order: `PCMU`, `PCMA`, `G722`. */
  codecs: readonly ('PCMU' | 'PCMA' | 'G722')[];
  /** The SIP user of its account (`sip:user@host:port`). */
  user: string;
  /** Answers a call to it at once. */
  autoAnswer?: boolean;
  /** Each call's audio both ways as WAV files in this folder (the sndfile module): `-dec.wav` is what it heard. */
  dumps?: string;
}

/** Writes baresip's config, accounts and contacts into `o.home`. */
export function writeBaresipHome(o: BaresipHome): void {
  const modules = ['g711.so', ...(o.codecs.includes('G722') ? ['g722.so'] : []), 'aufile.so', 'aubridge.so'];
  const config: [string, string][] = [
    ['poll_method', 'epoll'],
    ['sip_listen', `${o.host}:${o.port}`],
    // Without it baresip writes the machine's first address into its SDP, not the one it sends from.
    ['net_interface', o.host],
    ['audio_player', 'aubridge,phone'],
    ['audio_source', `aufile,${o.microphone}`],
    ['audio_alert', 'aubridge,phone'],
    ['ausrc_srate', String(o.sampleRate)],
    ['auplay_srate', String(o.sampleRate)],
    ['ausrc_channels', '1'],
    ['auplay_channels', '1'],
    ['rtp_ports', o.rtpPorts],
    ['module_path', '/usr/lib/baresip/modules'],
    ...modules.map((m): [string, string] => ['module', m]),
    ...(o.dumps
      ? ([
          ['module', 'sndfile.so'],
          ['snd_path', o.dumps],
        ] as [string, string][])
      : []),
    ['module_app', 'account.so'],
    ['module_app', 'menu.so'],
  ];
  writeFileSync(join(o.home, 'config'), config.map((entry) => entry.join('\t')).join('\n') + '\n');
  const answer = o.autoAnswer ? ';answermode=auto' : '';
  writeFileSync(
    join(o.home, 'accounts'),
    `<sip:${o.user}@${o.host}:${o.port}>;regint=0${answer};audio_codecs=${o.codecs.join(',')}\n`,
  );
  writeFileSync(join(o.home, 'contacts'), '');
}
