#pragma once
// What any GPU can report, with a wide margin (docs/contracts.md, "Plausible values"). A value
// outside these bounds is a corrupt or hostile file, refused where it is read with its
// file:line:column. Inside them every sum, product and ratio the analysis makes stays finite: a
// power of 1e308 W integrated over a second overflows to inf, and inf - inf is the NaN that a
// decision must never be made from.
namespace regime::plausible {

// The largest boards draw about 1.2 kW (B200) and a superchip module 2.7 kW (GB200): 5 kW per
// GPU is beyond any, and a power limit or a sweep table's cap is a power too.
inline constexpr double kMaxPower_W = 5000;
// The cumulative energy counter: 5 kW for 600 years. Real counters start at the driver's load.
inline constexpr double kMaxEnergy_J = 1e14;
// Below any cold-aisle reading and above any shutdown threshold (95-105 C): a sensor's garbage.
inline constexpr double kMinTemp_C = -50;
inline constexpr double kMaxTemp_C = 200;
// SM clocks are 2-3 GHz, GDDR7 memory clocks about 14 GHz as NVML reports them.
inline constexpr double kMaxClock_MHz = 100000;
inline constexpr double kMaxUtil_pct = 100;
// A sweep table's time per unit of work: an epoch of a large job takes hours (the Zeus V100
// table has 13.6 h); 10^7 s is 116 days per unit.
inline constexpr double kMaxUnitTime_s = 1e7;
// Energy per unit of work: the largest power for the longest unit.
inline constexpr double kMaxUnitEnergy_J = kMaxPower_W * kMaxUnitTime_s;

}  // namespace regime::plausible
