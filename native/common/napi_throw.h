// Throwing from an addon must never abort the process: while a worker thread is being
// terminated napi_throw fails, and node-addon-api's ThrowAsJavaScriptException turns that
// failure into a fatal error. These ignore the status (and skip when an exception is pending).
#pragma once
#include <napi.h>
#include <string>

static inline void ThrowError(Napi::Env env, const std::string& message) {
  if (env.IsExceptionPending()) return;
  napi_throw_error(env, nullptr, message.c_str());
}

static inline void ThrowTypeError(Napi::Env env, const std::string& message) {
  if (env.IsExceptionPending()) return;
  napi_throw_type_error(env, nullptr, message.c_str());
}
