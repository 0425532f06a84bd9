// Thin synchronous binding over Debian's pocketsphinx 5prealpha. Every Decoder call blocks, so the
// runtime only uses decoders inside worker threads (end_utt alone can take ~200 ms). A
// LanguageModel reads the package's n-gram model once (a memory-mapped trie, tens of ms) and then
// answers in microseconds, so the end of turn asks it on the main thread.
#include <napi.h>
#include <pocketsphinx.h>
#include <sphinxbase/cmn.h>
#include <sphinxbase/err.h>
#include <sphinxbase/feat.h>
#include <sphinxbase/logmath.h>
#include <sphinxbase/ngram_model.h>
#include <string>
#include <vector>

#include "napi_throw.h"

namespace {

class Decoder : public Napi::ObjectWrap<Decoder> {
 public:
  static Napi::Object Init(Napi::Env env, Napi::Object exports) {
    Napi::Function ctor = DefineClass(env, "Decoder", {
      InstanceMethod("startUtt", &Decoder::StartUtt),
      InstanceMethod("processRaw", &Decoder::ProcessRaw),
      InstanceMethod("endUtt", &Decoder::EndUtt),
      InstanceMethod("hyp", &Decoder::Hyp),
      InstanceMethod("segments", &Decoder::Segments),
      InstanceMethod("inSpeech", &Decoder::InSpeech),
      InstanceMethod("setJsgf", &Decoder::SetJsgf),
      InstanceMethod("setKeyphrase", &Decoder::SetKeyphrase),
      InstanceMethod("setKws", &Decoder::SetKws),
      InstanceMethod("setLmFile", &Decoder::SetLmFile),
      InstanceMethod("setSearch", &Decoder::SetSearch),
      InstanceMethod("getSearch", &Decoder::GetSearch),
      InstanceMethod("frameRate", &Decoder::FrameRate),
      InstanceMethod("nFrames", &Decoder::NFrames),
      InstanceMethod("cmn", &Decoder::Cmn),
      InstanceMethod("setCmn", &Decoder::SetCmn),
      InstanceMethod("updateCmn", &Decoder::UpdateCmn),
      InstanceMethod("close", &Decoder::Close),
    });
    exports.Set("Decoder", ctor);
    return exports;
  }

  // new Decoder(["-hmm", dir, "-lm", file, ...]): the same flags as the pocketsphinx CLI.
  explicit Decoder(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Decoder>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsArray()) {
      ThrowTypeError(env, "Decoder(args: string[])");
      return;
    }
    Napi::Array arr = info[0].As<Napi::Array>();
    std::vector<std::string> store;
    for (uint32_t i = 0; i < arr.Length(); i++) store.push_back(arr.Get(i).ToString().Utf8Value());
    std::vector<char*> argv;
    for (auto& s : store) argv.push_back(const_cast<char*>(s.c_str()));
    cmd_ln_t* config = cmd_ln_parse_r(nullptr, ps_args(), static_cast<int32>(argv.size()), argv.data(), TRUE);
    if (config == nullptr) {
      ThrowError(env, "pocketsphinx: invalid decoder arguments");
      return;
    }
    ps_ = ps_init(config);
    cmd_ln_free_r(config);
    if (ps_ == nullptr) {
      ThrowError(env, "pocketsphinx: decoder init failed (model paths?)");
      return;
    }
  }

  ~Decoder() override { Free(); }

 private:
  ps_decoder_t* ps_ = nullptr;

  void Free() {
    if (ps_ != nullptr) {
      ps_free(ps_);
      ps_ = nullptr;
    }
  }

  bool Check(Napi::Env env) {
    if (ps_ == nullptr) {
      ThrowError(env, "pocketsphinx: decoder closed");
      return false;
    }
    return true;
  }

  Napi::Value Fail(Napi::Env env, const char* what) {
    ThrowError(env, std::string("pocketsphinx: ") + what + " failed");
    return env.Undefined();
  }

  Napi::Value StartUtt(const Napi::CallbackInfo& info) {
    if (!Check(info.Env())) return info.Env().Undefined();
    if (ps_start_utt(ps_) < 0) return Fail(info.Env(), "start_utt");
    return info.Env().Undefined();
  }

  // processRaw(samples: Int16Array): number of frames searched.
  Napi::Value ProcessRaw(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!Check(env)) return env.Undefined();
    if (info.Length() < 1 || !info[0].IsTypedArray() ||
        info[0].As<Napi::TypedArray>().TypedArrayType() != napi_int16_array) {
      ThrowTypeError(env, "processRaw(samples: Int16Array)");
      return env.Undefined();
    }
    Napi::Int16Array a = info[0].As<Napi::Int16Array>();
    int n = ps_process_raw(ps_, a.Data(), a.ElementLength(), FALSE, FALSE);
    if (n < 0) return Fail(env, "process_raw");
    return Napi::Number::New(env, n);
  }

  Napi::Value EndUtt(const Napi::CallbackInfo& info) {
    if (!Check(info.Env())) return info.Env().Undefined();
    if (ps_end_utt(ps_) < 0) return Fail(info.Env(), "end_utt");
    return info.Env().Undefined();
  }

  // hyp(): { text, score, prob } or null when nothing was recognised.
  Napi::Value Hyp(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!Check(env)) return env.Undefined();
    int32 score = 0;
    const char* h = ps_get_hyp(ps_, &score);
    if (h == nullptr) return env.Null();
    Napi::Object o = Napi::Object::New(env);
    o.Set("text", h);
    o.Set("score", score);
    // Posterior only exists after end_utt with a lattice; 0 otherwise.
    o.Set("prob", ps_get_in_speech(ps_) ? 0 : ps_get_prob(ps_));
    return o;
  }

  // segments(): [{ word, start, end, prob }] in frames (frameRate() per second).
  Napi::Value Segments(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!Check(env)) return env.Undefined();
    Napi::Array out = Napi::Array::New(env);
    uint32_t i = 0;
    for (ps_seg_t* seg = ps_seg_iter(ps_); seg != nullptr; seg = ps_seg_next(seg)) {
      int sf = 0, ef = 0;
      int32 ascr = 0, lscr = 0, lback = 0;
      ps_seg_frames(seg, &sf, &ef);
      Napi::Object o = Napi::Object::New(env);
      o.Set("word", ps_seg_word(seg));
      o.Set("start", sf);
      o.Set("end", ef);
      o.Set("prob", ps_seg_prob(seg, &ascr, &lscr, &lback));
      o.Set("ascr", ascr);
      out.Set(i++, o);
    }
    return out;
  }

  Napi::Value InSpeech(const Napi::CallbackInfo& info) {
    if (!Check(info.Env())) return info.Env().Undefined();
    return Napi::Boolean::New(info.Env(), ps_get_in_speech(ps_) != 0);
  }

  bool Strings(const Napi::CallbackInfo& info, size_t n) {
    for (size_t i = 0; i < n; i++) {
      if (info.Length() <= i || !info[i].IsString()) {
        ThrowTypeError(info.Env(), "expected string arguments");
        return false;
      }
    }
    return Check(info.Env());
  }

  Napi::Value SetJsgf(const Napi::CallbackInfo& info) {
    if (!Strings(info, 2)) return info.Env().Undefined();
    std::string name = info[0].As<Napi::String>(), jsgf = info[1].As<Napi::String>();
    if (ps_set_jsgf_string(ps_, name.c_str(), jsgf.c_str()) < 0) return Fail(info.Env(), "set_jsgf_string");
    return info.Env().Undefined();
  }

  Napi::Value SetKeyphrase(const Napi::CallbackInfo& info) {
    if (!Strings(info, 2)) return info.Env().Undefined();
    std::string name = info[0].As<Napi::String>(), phrase = info[1].As<Napi::String>();
    if (ps_set_keyphrase(ps_, name.c_str(), phrase.c_str()) < 0) return Fail(info.Env(), "set_keyphrase");
    return info.Env().Undefined();
  }

  Napi::Value SetKws(const Napi::CallbackInfo& info) {
    if (!Strings(info, 2)) return info.Env().Undefined();
    std::string name = info[0].As<Napi::String>(), file = info[1].As<Napi::String>();
    if (ps_set_kws(ps_, name.c_str(), file.c_str()) < 0) return Fail(info.Env(), "set_kws");
    return info.Env().Undefined();
  }

  Napi::Value SetLmFile(const Napi::CallbackInfo& info) {
    if (!Strings(info, 2)) return info.Env().Undefined();
    std::string name = info[0].As<Napi::String>(), file = info[1].As<Napi::String>();
    if (ps_set_lm_file(ps_, name.c_str(), file.c_str()) < 0) return Fail(info.Env(), "set_lm_file");
    return info.Env().Undefined();
  }

  Napi::Value SetSearch(const Napi::CallbackInfo& info) {
    if (!Strings(info, 1)) return info.Env().Undefined();
    std::string name = info[0].As<Napi::String>();
    if (ps_set_search(ps_, name.c_str()) < 0) return Fail(info.Env(), "set_search");
    return info.Env().Undefined();
  }

  Napi::Value GetSearch(const Napi::CallbackInfo& info) {
    if (!Check(info.Env())) return info.Env().Undefined();
    const char* s = ps_get_search(ps_);
    return s == nullptr ? info.Env().Null() : Napi::String::New(info.Env(), s);
  }

  Napi::Value FrameRate(const Napi::CallbackInfo& info) {
    if (!Check(info.Env())) return info.Env().Undefined();
    return Napi::Number::New(info.Env(), cmd_ln_int32_r(ps_get_config(ps_), "-frate"));
  }

  // Frames counted by the acoustic model; segment frames count from the same origin.
  Napi::Value NFrames(const Napi::CallbackInfo& info) {
    if (!Check(info.Env())) return info.Env().Undefined();
    return Napi::Number::New(info.Env(), ps_get_n_frames(ps_));
  }

  // The live cepstral mean the decoder subtracts from every frame, or null without live CMN.
  cmn_t* LiveCmn() {
    feat_t* feat = ps_get_feat(ps_);
    return feat == nullptr ? nullptr : feat->cmn_struct;
  }

  // cmn(): { mean: number[], frames: number } — the current mean and the frames behind it.
  Napi::Value Cmn(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!Check(env)) return env.Undefined();
    cmn_t* c = LiveCmn();
    if (c == nullptr) return env.Null();
    Napi::Array mean = Napi::Array::New(env, c->veclen);
    for (int32 i = 0; i < c->veclen; i++) mean.Set(i, static_cast<double>(c->cmn_mean[i]));
    Napi::Object o = Napi::Object::New(env);
    o.Set("mean", mean);
    o.Set("frames", c->nframe);
    return o;
  }

  // setCmn(mean: number[], frames: number): the mean to start from, weighted as if estimated
  // over `frames` frames, so the caller's own speech outweighs it after about that many.
  Napi::Value SetCmn(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!Check(env)) return env.Undefined();
    cmn_t* c = LiveCmn();
    if (c == nullptr) return Fail(env, "set_cmn (no live CMN)");
    if (info.Length() < 2 || !info[0].IsArray() || !info[1].IsNumber()) {
      ThrowTypeError(env, "setCmn(mean: number[], frames: number)");
      return env.Undefined();
    }
    Napi::Array mean = info[0].As<Napi::Array>();
    int32 frames = info[1].As<Napi::Number>().Int32Value();
    if (static_cast<int32>(mean.Length()) != c->veclen || frames < 1) {
      ThrowTypeError(env, "setCmn: mean must have one value per cepstrum and frames >= 1");
      return env.Undefined();
    }
    for (int32 i = 0; i < c->veclen; i++) {
      mfcc_t v = static_cast<mfcc_t>(mean.Get(i).As<Napi::Number>().DoubleValue());
      c->cmn_mean[i] = v;
      c->sum[i] = v * frames;
    }
    c->nframe = frames;
    return env.Undefined();
  }

  // updateCmn(): re-estimate the mean from the frames seen so far (the library only does this
  // at the end of an utterance or every 800 frames, which leaves a new caller's first sentence
  // normalised with the model's prior).
  Napi::Value UpdateCmn(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!Check(env)) return env.Undefined();
    cmn_t* c = LiveCmn();
    if (c != nullptr && c->nframe > 0) cmn_live_update(c);
    return env.Undefined();
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    Free();
    return info.Env().Undefined();
  }
};

// new LanguageModel(path): an n-gram model (ARPA, DMP or trie binary, as pocketsphinx reads them).
class LanguageModel : public Napi::ObjectWrap<LanguageModel> {
 public:
  static Napi::Object Init(Napi::Env env, Napi::Object exports) {
    Napi::Function ctor = DefineClass(env, "LanguageModel", {
      InstanceMethod("endProbability", &LanguageModel::EndProbability),
      InstanceMethod("close", &LanguageModel::Close),
    });
    exports.Set("LanguageModel", ctor);
    return exports;
  }

  explicit LanguageModel(const Napi::CallbackInfo& info) : Napi::ObjectWrap<LanguageModel>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsString()) {
      ThrowTypeError(env, "LanguageModel(path: string)");
      return;
    }
    std::string path = info[0].As<Napi::String>().Utf8Value();
    // The base pocketsphinx itself uses for its scores: probabilities come back through the same table.
    lmath_ = logmath_init(1.0001, 0, 0);
    model_ = ngram_model_read(nullptr, path.c_str(), NGRAM_AUTO, lmath_);
    if (model_ == nullptr) ThrowError(env, "pocketsphinx: ngram_model_read failed for " + path);
  }

  ~LanguageModel() override { Free(); }

 private:
  logmath_t* lmath_ = nullptr;
  ngram_model_t* model_ = nullptr;

  void Free() {
    if (model_ != nullptr) ngram_model_free(model_);
    if (lmath_ != nullptr) logmath_free(lmath_);
    model_ = nullptr;
    lmath_ = nullptr;
  }

  // endProbability(words: string[]): P(</s> | the last words), the chance a sentence ends after
  // them; with no words, the chance one ends at once. Words the model lacks are its <UNK>.
  Napi::Value EndProbability(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (model_ == nullptr) {
      ThrowError(env, "pocketsphinx: language model closed");
      return env.Undefined();
    }
    if (info.Length() < 1 || !info[0].IsArray()) {
      ThrowTypeError(env, "endProbability(words: string[])");
      return env.Undefined();
    }
    Napi::Array arr = info[0].As<Napi::Array>();
    // Newest first, as ngram_prob wants them: </s>, then the history back to the model's order.
    int32 order = ngram_model_get_size(model_);
    std::vector<std::string> store{"</s>"};
    for (int32 i = static_cast<int32>(arr.Length()) - 1; i >= 0 && static_cast<int32>(store.size()) < order; i--)
      store.push_back(arr.Get(i).As<Napi::String>().Utf8Value());
    if (static_cast<int32>(store.size()) < order) store.push_back("<s>");
    std::vector<const char*> words;
    for (const auto& w : store) words.push_back(w.c_str());
    int32 lp = ngram_prob(model_, words.data(), static_cast<int32>(words.size()));
    return Napi::Number::New(env, logmath_exp(lmath_, lp));
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    Free();
    return info.Env().Undefined();
  }
};

// pocketsphinx logs to stderr by default; the runtime has its own logger. Its log target is one
// global for every thread: "-logfn" makes each new decoder fclose() the FILE that decoders in
// other worker threads may be writing to at that moment (a crash, or a hang on the freed FILE's
// lock). So no decoder is given -logfn, and every message goes to a callback that drops it.
void DropLog(void*, err_lvl_t, const char*, ...) {}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  err_set_callback(DropLog, nullptr);
  Decoder::Init(env, exports);
  return LanguageModel::Init(env, exports);
}

}  // namespace

NODE_API_MODULE(pocketsphinx_addon, Init)
