// Thin binding over Debian's libflite 2.2 with its built-in voices. synthesize() blocks until
// the utterance is done, handing audio to a JS callback as flite's vocoder produces it (the
// "streaming_info" hook), so the runtime only calls it inside worker threads.
//
// Thread safety: every worker thread loads this same shared object, so voices and flite's
// globals are per process. flite is not thread-safe: its values are reference-counted without
// atomics, and utt_init / delete_utterance count references on the shared voice's features. One
// process-wide lock therefore covers the front end (text analysis, parameter prediction) and the
// teardown of every utterance. It is released while the vocoder streams audio, which only touches
// the utterance's own wave, read-only voice data and rand(), so two calls' vocoders run in parallel.
#include <napi.h>

#include <cstring>
#include <map>
#include <mutex>
#include <string>

extern "C" {
#include <flite.h>
cst_voice* register_cmu_us_slt(const char* voxdir);
cst_voice* register_cmu_us_rms(const char* voxdir);
cst_voice* register_cmu_us_awb(const char* voxdir);
cst_voice* register_cmu_us_kal(const char* voxdir);
cst_voice* register_cmu_us_kal16(const char* voxdir);
cst_voice* register_cmu_time_awb(const char* voxdir);
}

#include "napi_throw.h"

namespace {

// The first chunk is small so the caller hears audio as early as possible; later ones are
// larger so a long sentence costs few messages. Both in samples at the voice's rate.
constexpr int kFirstChunkSamples = 256;
constexpr int kLaterChunkSamples = 1600;

std::mutex g_flite;
std::once_flag g_init;
std::map<std::string, cst_voice*> g_voices;  // guarded by g_flite

using Register = cst_voice* (*)(const char*);
const std::map<std::string, Register>& Registry() {
  static const std::map<std::string, Register> registry = {
      {"slt", register_cmu_us_slt},     {"rms", register_cmu_us_rms}, {"awb", register_cmu_us_awb},
      {"kal", register_cmu_us_kal},     {"kal16", register_cmu_us_kal16},
      {"awb_time", register_cmu_time_awb},
  };
  return registry;
}

// Caller holds g_flite. Registration builds the voice's features once; later calls reuse it.
cst_voice* VoiceLocked(const std::string& name) {
  auto loaded = g_voices.find(name);
  if (loaded != g_voices.end()) return loaded->second;
  auto reg = Registry().find(name);
  if (reg == Registry().end()) return nullptr;
  cst_voice* voice = reg->second(nullptr);
  if (voice != nullptr) g_voices[name] = voice;
  return voice;
}

// State of one synthesize() call, reached from flite's callback through asi->userdata.
struct Job {
  napi_env env;
  napi_value on_audio;  // lives in the scope of the synthesize() call
  const int32_t* cancel;
  bool locked;  // this thread holds g_flite
  bool failed;  // the JS callback threw, or JS can no longer run: stop
};

bool Cancelled(const Job* job) {
  return __atomic_load_n(job->cancel, __ATOMIC_ACQUIRE) != 0;
}

// Hands one block to JS through plain N-API calls: node-addon-api makes a failed call a fatal
// error, and these calls do fail when the worker is terminated in the middle of a sentence.
bool Deliver(Job* job, const short* data, int size, int sample_rate) {
  napi_env env = job->env;
  napi_handle_scope scope;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return false;
  void* bytes = nullptr;
  napi_value buffer, samples, rate, recv, result;
  bool ok = napi_create_arraybuffer(env, static_cast<size_t>(size) * sizeof(short), &bytes, &buffer) == napi_ok &&
            napi_create_typedarray(env, napi_int16_array, static_cast<size_t>(size), buffer, 0, &samples) == napi_ok &&
            napi_create_int32(env, sample_rate, &rate) == napi_ok && napi_get_undefined(env, &recv) == napi_ok;
  if (ok) {
    std::memcpy(bytes, data, static_cast<size_t>(size) * sizeof(short));
    napi_value argv[2] = {samples, rate};
    ok = napi_call_function(env, recv, job->on_audio, 2, argv, &result) == napi_ok;
  }
  napi_close_handle_scope(env, scope);
  return ok;
}

int OnAudio(const cst_wave* w, int start, int size, int last, cst_audio_streaming_info* asi) {
  Job* job = static_cast<Job*>(asi->userdata);
  bool stop = job->failed || Cancelled(job);
  // From the first chunk on, the vocoder runs without the lock (see the top of this file).
  if (!stop && !last && job->locked) {
    g_flite.unlock();
    job->locked = false;
  }
  if (!stop && size > 0 && !Deliver(job, w->samples + start, size, w->sample_rate)) {
    job->failed = true;
    stop = true;
  }
  // What runs after the vocoder (and after a STOP) touches shared state again: lock first.
  if ((last || stop) && !job->locked) {
    g_flite.lock();
    job->locked = true;
  }
  asi->min_buffsize = kLaterChunkSamples;
  return stop ? CST_AUDIO_STREAM_STOP : CST_AUDIO_STREAM_CONT;
}

void Init() {
  std::call_once(g_init, [] { flite_init(); });
}

// voices(): the voice names compiled into this addon.
Napi::Value Voices(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Array out = Napi::Array::New(env);
  uint32_t i = 0;
  for (const auto& entry : Registry()) out.Set(i++, entry.first);
  return out;
}

// loadVoice(name): registers the voice now so the first sentence pays only synthesis.
Napi::Value LoadVoice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) {
    ThrowTypeError(env, "loadVoice(name: string)");
    return env.Undefined();
  }
  std::string name = info[0].As<Napi::String>();
  Init();
  std::lock_guard<std::mutex> guard(g_flite);
  return Napi::Boolean::New(env, VoiceLocked(name) != nullptr);
}

// synthesize(voice, text, durationStretch, cancel: Int32Array, onAudio(samples, sampleRate)):
// true when the utterance was spoken to its end, false when cancel[0] became non-zero first.
Napi::Value Synthesize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 5 || !info[0].IsString() || !info[1].IsString() || !info[2].IsNumber() || !info[3].IsTypedArray() ||
      info[3].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array || info[3].As<Napi::Int32Array>().ElementLength() < 1 ||
      !info[4].IsFunction()) {
    ThrowTypeError(env, "synthesize(voice: string, text: string, stretch: number, cancel: Int32Array, onAudio: Function)");
    return env.Undefined();
  }
  std::string name = info[0].As<Napi::String>();
  std::string text = info[1].As<Napi::String>();
  double stretch = info[2].As<Napi::Number>().DoubleValue();
  Napi::Int32Array cancel = info[3].As<Napi::Int32Array>();
  Job job{env, info[4], cancel.Data(), true, false};
  Init();

  g_flite.lock();
  cst_voice* voice = VoiceLocked(name);
  if (voice == nullptr) {
    g_flite.unlock();
    ThrowError(env, "flite: unknown voice " + name);
    return env.Undefined();
  }
  cst_audio_streaming_info* asi = new_audio_streaming_info();
  asi->asc = OnAudio;
  asi->min_buffsize = kFirstChunkSamples;
  asi->userdata = &job;
  cst_utterance* utt = new_utterance();
  utt_set_input_text(utt, text.c_str());
  utt_init(utt, voice);
  // Per utterance, never on the shared voice: the utterance owns (and frees) asi.
  feat_set(utt->features, "streaming_info", audio_streaming_info_val(asi));
  if (stretch > 0) feat_set_float(utt->features, "duration_stretch", static_cast<float>(stretch));
  cst_utterance* done = utt_synth(utt);
  if (!job.locked) {
    g_flite.lock();  // a voice whose vocoder skipped the last callback
    job.locked = true;
  }
  delete_utterance(utt);  // also frees asi, through the streaming_info feature
  g_flite.unlock();

  // The callback's exception is pending, or the worker is going away and nobody is listening.
  if (job.failed) return env.Undefined();
  if (done == nullptr) {
    ThrowError(env, "flite: synthesis failed");
    return env.Undefined();
  }
  return Napi::Boolean::New(env, !Cancelled(&job));
}

Napi::Object InitModule(Napi::Env env, Napi::Object exports) {
  exports.Set("voices", Napi::Function::New(env, Voices));
  exports.Set("loadVoice", Napi::Function::New(env, LoadVoice));
  exports.Set("synthesize", Napi::Function::New(env, Synthesize));
  return exports;
}

}  // namespace

NODE_API_MODULE(flite_addon, InitModule)
