{
  "targets": [
    {
      "target_name": "flite_addon",
      "sources": ["src/addon.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "../common", "/usr/include/flite"],
      "cflags_cc": ["-std=c++17", "-O2"],
      "libraries": [
        "-lflite_cmu_us_slt", "-lflite_cmu_us_rms", "-lflite_cmu_us_awb", "-lflite_cmu_us_kal",
        "-lflite_cmu_us_kal16", "-lflite_cmu_time_awb", "-lflite_usenglish", "-lflite_cmulex", "-lflite", "-lm"
      ],
      "defines": ["NAPI_VERSION=8", "NAPI_DISABLE_CPP_EXCEPTIONS", "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"]
    }
  ]
}
