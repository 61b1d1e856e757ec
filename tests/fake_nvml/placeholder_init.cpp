// Replaced by the full fake NVML (issue 2). Until then the library exports nvmlInit_v2 only.
extern "C" int nvmlInit_v2() { return 0; }
