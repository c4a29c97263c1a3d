// Bindings of sequential_betting.hpp: a test's fixed model, its initial state and the
// betting loop over a block of rows. The state travels as a dict of arrays and numbers
// (what the Python test saves); bet_rows works on a copy and returns the new state, so a
// failed or interrupted call changes nothing.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nystrom_kme/sequential_betting.hpp>

#include "arrays.hpp"

namespace py = pybind11;
using namespace pybind11::literals;
using nystrom_kme::BettingModel;
using nystrom_kme::BettingState;
using nystrom_kme::Index;
using nystrom_kme::RowMatrixXd;
using nystrom_kme::python::add_argument_error;
using nystrom_kme::python::as_matrix;
using nystrom_kme::python::CArray;

namespace {

RowMatrixXd betting_matrix(const CArray<double>& a, const char* name) { return as_matrix(a, name); }

Eigen::VectorXd betting_vector(const CArray<double>& a, const char* name) {
  if (a.ndim() != 1) throw std::invalid_argument(std::string(name) + " must be 1-D");
  return Eigen::Map<const Eigen::VectorXd>(a.data(), a.shape(0));
}

py::array_t<double> betting_array(const RowMatrixXd& M) {
  py::array_t<double> out({py::ssize_t(M.rows()), py::ssize_t(M.cols())});
  std::copy(M.data(), M.data() + M.size(), out.mutable_data());
  return out;
}

py::array_t<double> betting_array(const Eigen::VectorXd& v) {
  py::array_t<double> out(py::ssize_t(v.size()));
  std::copy(v.data(), v.data() + v.size(), out.mutable_data());
  return out;
}

py::dict betting_state_dict(const BettingState& s) {
  return py::dict("sums_x"_a = betting_array(s.sums_x), "count_x"_a = s.count_x, "sums_y"_a = betting_array(s.sums_y),
                  "count_y"_a = s.count_y, "witness"_a = betting_array(s.witness), "offset"_a = betting_array(s.offset),
                  "bettors"_a = betting_array(s.bettors), "t"_a = s.t, "next_refresh"_a = s.next_refresh);
}

template <class V>
V betting_field(const py::dict& d, const char* key) {
  if (!d.contains(key)) throw std::invalid_argument(std::string("state lacks '") + key + "'");
  return d[key].cast<V>();
}

BettingState betting_state_from(const py::dict& d) {
  BettingState s;
  s.sums_x = betting_matrix(betting_field<CArray<double>>(d, "sums_x"), "sums_x");
  s.count_x = betting_field<double>(d, "count_x");
  s.sums_y = betting_matrix(betting_field<CArray<double>>(d, "sums_y"), "sums_y");
  s.count_y = betting_field<double>(d, "count_y");
  s.witness = betting_matrix(betting_field<CArray<double>>(d, "witness"), "witness");
  s.offset = betting_vector(betting_field<CArray<double>>(d, "offset"), "offset");
  s.bettors = betting_matrix(betting_field<CArray<double>>(d, "bettors"), "bettors");
  s.t = betting_field<std::int64_t>(d, "t");
  s.next_refresh = betting_field<std::int64_t>(d, "next_refresh");
  return s;
}

}  // namespace

void register_sequential(py::module_& m) {
  py::class_<BettingModel>(m, "BettingModel",
                           "A sequential test's landmarks, kernels, matrices, margins and mixture weights, "
                           "checked once (sequential_betting.hpp).")
      .def(py::init([](const CArray<double>& landmarks, const std::vector<nystrom_kme::Kernel>& kernels,
                       const CArray<double>& inverse, const CArray<double>& gram, const CArray<double>& margin,
                       const CArray<double>& weights, bool margin_bets, bool pairs_join, Index refresh,
                       double limit) {
             return BettingModel(betting_matrix(landmarks, "landmarks"), kernels, betting_matrix(inverse, "inverse"),
                                 betting_matrix(gram, "gram"), betting_vector(margin, "margin"),
                                 betting_matrix(weights, "weights"),
                                 nystrom_kme::BettingOptions{margin_bets, pairs_join, refresh, limit});
           }),
           "landmarks"_a.noconvert(), "kernels"_a, "inverse"_a.noconvert(), "gram"_a.noconvert(),
           "margin"_a.noconvert(), "weights"_a.noconvert(), "margin_bets"_a, "pairs_join"_a, "refresh"_a, "limit"_a)
      .def_property_readonly("n_kernels", &BettingModel::n_kernels)
      .def_property_readonly("n_landmarks", &BettingModel::n_landmarks);
  m.def(
      "betting_state",
      [](const BettingModel& model, const CArray<double>& sums_y, double count_y) {
        const RowMatrixXd s = betting_matrix(sums_y, "sums_y");
        if (s.rows() != model.n_kernels() || s.cols() != model.n_landmarks())
          throw std::invalid_argument("sums_y must have shape (n_kernels, n_landmarks)");
        if (!(count_y >= 0.0) || !std::isfinite(count_y)) throw std::invalid_argument("count_y must be finite and >= 0");
        return betting_state_dict(nystrom_kme::initial_betting_state(model, s, count_y));
      },
      "model"_a, "sums_y"_a.noconvert(), "count_y"_a,
      "The state before the first row: S_y = sums_y (K, m), n_y = count_y, every wealth 1.");
  m.def(
      "bet_rows",
      [](const BettingModel& model, const CArray<double>& X, const CArray<double>& Y, const py::dict& state,
         int n_threads) {
        const auto x = as_matrix(X, "X");
        const auto y = as_matrix(Y, "Y");
        BettingState s = betting_state_from(state);  // a copy: the caller's state changes only on success
        Eigen::VectorXd log_wealth;
        {
          // Safe without the GIL: the model and the views are kept alive by the caller.
          py::gil_scoped_release nogil;
          log_wealth = nystrom_kme::bet_rows(model, x, y, s, n_threads);
        }
        return py::make_tuple(betting_array(log_wealth), betting_state_dict(s));
      },
      "model"_a, "X"_a.noconvert(), "Y"_a.noconvert(), "state"_a, "n_threads"_a = 0,
      "Bet on the rows of X (r, d), the first rows of Y (q <= r, d) paired with X's: (the log of the "
      "mixture's wealth after each row (r,), the new state).");
  add_argument_error(m, "betting_state", "(model, sums_y, count_y): model a BettingModel, sums_y (K, m) float64, "
                                         "count_y a float");
  add_argument_error(m, "bet_rows",
                     "(model, X, Y, state, n_threads=0): model a BettingModel, X (r, d) and Y (q, d) float64 "
                     "with q <= r (q = 0: no pairs), state a dict from betting_state or bet_rows, n_threads an int");
}
