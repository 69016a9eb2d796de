/* Skip a graph's resize redraw when nothing it draws would change.

   dcc.Graph (Dash 4) asks Plotly to resize whenever its element changes size, and a new figure
   with another layout.height (a timeline with more lanes, a buffer grid with more ranks) changes
   that size itself: Plotly then redraws the whole figure a second time, ~100 ms per graph here,
   for a plot whose height the figure fixes and whose width did not change. This wrapper lets
   such a resize through only when the graph's width differs from the width it was drawn at (or
   the figure leaves its height to the container). Loaded after plotly-cartesian.min.js (assets
   load in name order). */
(function () {
    function patch() {
        if (!window.Plotly || !window.Plotly.Plots) return false;
        const plots = window.Plotly.Plots;
        if (plots.__collsimResize) return true;
        const resize = plots.resize;
        plots.resize = function (target) {
            const gd = typeof target === "string" ? document.getElementById(target) : target;
            const drawn = gd && gd._fullLayout;
            if (drawn && gd.layout && gd.layout.height && !gd.layout.width) {
                const width = parseFloat(window.getComputedStyle(gd).width);
                if (Math.abs(width - drawn.width) < 1) return Promise.resolve(gd);
            }
            return resize.apply(this, arguments);
        };
        plots.__collsimResize = true;
        return true;
    }
    if (!patch()) {
        const timer = setInterval(function () { if (patch()) clearInterval(timer); }, 20);
    }
})();
