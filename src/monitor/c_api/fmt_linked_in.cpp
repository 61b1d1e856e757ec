// fmt's compiled part, built into libregime_monitor.so so the library (and the wheel that ships
// it) needs no libfmt.so at run time: Debian's libfmt-dev ships no static archive, and a Python
// host may have a different fmt or none. These are the definitions of fmt 9's src/format.cc;
// with -Wl,--as-needed the linker then drops libfmt.so, and the version script keeps them
// private to the library.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API void buffer<char>::append(const char*, const char*);

}  // namespace detail
FMT_END_NAMESPACE
