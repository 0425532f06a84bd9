// G.722 (ITU-T, 64 kbit/s, 16 kHz) encoder and decoder over Debian's spandsp. Each object keeps
// the codec's ADPCM state for one direction of one call, so frames must go through it in order.
#include <napi.h>
#include <spandsp.h>
#include "napi_throw.h"

namespace {

class Encoder : public Napi::ObjectWrap<Encoder> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Encoder", {InstanceMethod("encode", &Encoder::Encode)});
  }

  explicit Encoder(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Encoder>(info) {
    state_ = g722_encode_init(nullptr, 64000, 0);
    if (!state_) ThrowError(info.Env(), "g722: encoder state could not be allocated");
  }

  ~Encoder() override {
    if (state_) g722_encode_free(state_);
  }

 private:
  // Int16Array of 16 kHz samples in; a Buffer of half as many bytes out.
  Napi::Value Encode(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!state_) return env.Null();
    if (info.Length() < 1 || !info[0].IsTypedArray() ||
        info[0].As<Napi::TypedArray>().TypedArrayType() != napi_int16_array) {
      ThrowTypeError(env, "g722: encode takes an Int16Array");
      return env.Null();
    }
    Napi::Int16Array pcm = info[0].As<Napi::Int16Array>();
    const int samples = static_cast<int>(pcm.ElementLength());
    Napi::Buffer<uint8_t> out = Napi::Buffer<uint8_t>::New(env, (samples + 1) / 2);
    const int n = g722_encode(state_, out.Data(), pcm.Data(), samples);
    return Napi::Buffer<uint8_t>::Copy(env, out.Data(), n < 0 ? 0 : n);
  }

  g722_encode_state_t* state_ = nullptr;
};

class Decoder : public Napi::ObjectWrap<Decoder> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Decoder", {InstanceMethod("decode", &Decoder::Decode)});
  }

  explicit Decoder(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Decoder>(info) {
    state_ = g722_decode_init(nullptr, 64000, 0);
    if (!state_) ThrowError(info.Env(), "g722: decoder state could not be allocated");
  }

  ~Decoder() override {
    if (state_) g722_decode_free(state_);
  }

 private:
  // G.722 bytes in (a Uint8Array or Buffer); an Int16Array of twice as many 16 kHz samples out.
  Napi::Value Decode(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!state_) return env.Null();
    if (info.Length() < 1 || !info[0].IsTypedArray() ||
        info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
      ThrowTypeError(env, "g722: decode takes a Uint8Array");
      return env.Null();
    }
    Napi::Uint8Array bytes = info[0].As<Napi::Uint8Array>();
    const int length = static_cast<int>(bytes.ElementLength());
    Napi::Int16Array out = Napi::Int16Array::New(env, static_cast<size_t>(length) * 2);
    const int n = g722_decode(state_, out.Data(), bytes.Data(), length);
    if (n < 0) return Napi::Int16Array::New(env, 0);
    if (static_cast<size_t>(n) == out.ElementLength()) return out;
    return Napi::Int16Array::New(env, static_cast<size_t>(n), out.ArrayBuffer(), 0);
  }

  g722_decode_state_t* state_ = nullptr;
};

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("Encoder", Encoder::Define(env));
  exports.Set("Decoder", Decoder::Define(env));
  return exports;
}

}  // namespace

NODE_API_MODULE(g722_addon, Init)
