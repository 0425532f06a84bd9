{
  "targets": [
    {
      "target_name": "g722_addon",
      "sources": ["src/addon.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "../common"],
      "cflags_cc": ["<!@(pkg-config --cflags spandsp)", "-std=c++17", "-O2"],
      "libraries": ["<!@(pkg-config --libs spandsp)"],
      "defines": ["NAPI_VERSION=8", "NAPI_DISABLE_CPP_EXCEPTIONS", "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"]
    }
  ]
}
