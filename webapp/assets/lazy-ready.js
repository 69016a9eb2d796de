/* dcc's lazy components resolved before the page first renders (first loads, issue 21).

   dcc renders Graph, Dropdown and Slider through React.lazy. A lazy component suspends on its
   first render even when its code is already there (webapp/app.py serves those chunks with the
   page), and React 18 then holds the content back until 500 ms after the fallback was committed
   (its FALLBACK_THROTTLE_MS): every graph of a first load was drawn at least 0.5 s after the page
   rendered. This script (loaded after React, before dcc: assets load between them) notes each
   lazy component dcc creates, and once the page's scripts have run, starts loading those whose
   code is on the page already; they resolve in a few microtasks, before the layout arrives, so
   the first render finds them resolved. Which code a lazy needs: the webpack chunk ids its loader
   names (".e(746)"), all installed; a lazy made by dcc's asyncDecorator hides its loader, so it
   is known by its component (Object.defineProperty(component, "_dashprivate_isLazyComponentReady")
   right after the lazy is made) and its chunk's script on the page (Graph: async-graph). A lazy
   whose code is not on the page (Markdown, Upload, date pickers, ...) is left alone: it loads when
   first rendered, as before. Nothing here changes what a component does. */
(function () {
    const React = window.React;
    if (!React || !React.lazy || React.lazy.__collsim) return;
    const DECORATED = {Graph: "async-graph"};  // dcc component -> its chunk's script name
    const lazy = React.lazy;
    const define = Object.defineProperty;
    const created = [];  // [loader, lazy component, dcc component or null]
    React.lazy = function (load) {
        const component = lazy(load);
        created.push([load, component, null]);
        return component;
    };
    React.lazy.__collsim = true;
    Object.defineProperty = function (target, name) {
        if (name === "_dashprivate_isLazyComponentReady" && created.length) created[created.length - 1][2] = target;
        return define.apply(this, arguments);
    };

    function installed() {
        const ids = new Set();
        for (const entry of self.webpackChunkdash_core_components || []) {
            for (const id of entry[0] || []) ids.add(String(id));
        }
        return ids;
    }

    function chunksOf(load) {  // the webpack chunk ids its loader asks for: ".e(746)"
        const ids = [];
        const text = String(load);
        const pattern = /\.e\((\d+)\)/g;
        let match;
        while ((match = pattern.exec(text)) !== null) ids.push(match[1]);
        return ids;
    }

    function onPage(component) {
        const registry = window.dash_core_components || {};
        for (const [name, chunk] of Object.entries(DECORATED)) {
            if (registry[name] === component) return document.querySelector(`script[src*="/${chunk}."]`) !== null;
        }
        return false;
    }

    function resolveInstalled() {
        Object.defineProperty = define;
        const have = installed();
        window.collsimLazyReady = [];
        for (const [load, component, target] of created) {
            const chunks = chunksOf(load);
            const ready = chunks.length ? chunks.every(id => have.has(id)) : target !== null && onPage(target);
            if (!ready || !component._payload || typeof component._init !== "function") continue;
            try {
                component._init(component._payload);  // starts the load; throws its promise while pending
            } catch (pending) {
                if (pending && typeof pending.then === "function") pending.then(() => {}, () => {});
            }
            window.collsimLazyReady.push(chunks.length ? chunks.join("+") : Object.keys(DECORATED).find(k => window.dash_core_components[k] === target));
        }
    }

    if (document.readyState === "loading") {
        document.addEventListener("DOMContentLoaded", resolveInstalled, {once: true});
    } else {
        resolveInstalled();
    }
})();
