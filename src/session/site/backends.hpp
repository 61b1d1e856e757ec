#pragma once
// The device backends a program can open, registered once at its start: `regime`'s main and the
// tests' main call the same function, so both open the same schemes.
namespace regime::session {

// Registers every device backend (nvml, sim). replay: is not a device but a prober
// (plan/replay.hpp), and needs no registration.
void register_backends();

}  // namespace regime::session
