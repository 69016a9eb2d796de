/* The explorer's clientside callbacks (Python names them with ClientsideFunction("collsim", NAME)).

   They run in the browser so that an input change asks the server nothing it need not answer:
   the routing gate, the URL writers, the two_level-only fields, the stop signal for a background
   run, and saving a figure as PNG/SVG. After them, the guard that drops a server answer meant
   for a page the container no longer shows (collsimAnswer). */
window.dash_clientside = Object.assign({}, window.dash_clientside, {
    collsim: {
        /* The routing gate: a query the page wrote itself (every input change writes one) asks
           the server nothing; a new path, or a query from Back/Forward or the address bar, becomes
           a route request (with a time, so the same request twice still builds the page again).
           The layout of a page load carries that page already (`built`: its path and query,
           webapp.app.built_route): the first request for that page is skipped, once; its query
           may already be the one the page wrote at load (the URL writers run first then). A
           request's time is also the instance of the page built for it (webapp.app.instance_of):
           from then on only that page's URL writers write (collsimQuery). */
        routeGate: function (pathname, search, written, built) {
            const triggered = (dash_clientside.callback_context.triggered || []).map(t => t.prop_id);
            const searchOnly = triggered.length > 0 && triggered.every(id => id.endsWith('.search'));
            if (searchOnly && (search || '') === (written || '')) { return window.dash_clientside.no_update; }
            if (built && !window.collsimBuiltRouteUsed) {
                window.collsimBuiltRouteUsed = true;
                const same = (built.search || '') === (search || '') || (search || '') === (written || '');
                if (built.pathname === pathname && same) { return window.dash_clientside.no_update; }
            }
            window.collsimPage = Math.max(Date.now(), (window.collsimPage || 0) + 1);
            return {pathname: pathname, search: search || '', at: window.collsimPage};
        },

        /* The URL writer of every page (webapp.urlstate): the page's input values, in the order of
           spec.names, then the page's instance and its URL spec (webapp.urlstate.writer_states)
           -> the URL query, twice (for the address bar and for the page's record of what it
           wrote). Only what differs from spec.defaults is written (falsy values as empty;
           form-urlencoded, as webapp.urlstate reads it; webapp.urlstate.query_of is this rule in
           Python). A writer writes only for the page the address bar and the container show: see
           collsimQuery. */
        writeUrl: function (...args) {
            const [instance, spec] = args.slice(-2);
            const form = {};
            spec.names.forEach((name, i) => { form[name] = args[i]; });
            return collsimQuery(spec, form, instance);
        },

        /* The Collectives page's two calls of that writer: its form values (in the order of
           spec.names) and its view (step, colour-by, compare field and value, written as step,
           color and cmp). urlFromForm: the form's values first, the view's after; urlFromView:
           the view's first. */
        urlFromForm: function (...args) {
            const [instance, spec] = args.slice(-2);
            const count = spec.names.length;
            return collsimQuery(spec, collsimView(spec, args.slice(0, count), args.slice(count, count + 4)), instance);
        },
        urlFromView: function (...args) {
            const [instance, spec] = args.slice(-2);
            return collsimQuery(spec, collsimView(spec, args.slice(4, 4 + spec.names.length), args.slice(0, 4)), instance);
        },

        /* The two_level-only fields (one output each), shown for two_level. */
        twoLevelFields: function (topology) {
            const style = topology === 'two_level' ? {} : {display: 'none'};
            return Array(dash_clientside.callback_context.outputs_list.length).fill(style);
        },

        /* A new scenario (or colouring) stops a running background job; the signal is set only
           while one runs (the Cancel button is enabled), so an ordinary update sends no cancel. */
        stopSignal: function (scenario, color, idle) {
            return idle ? window.dash_clientside.no_update : Date.now();
        },

        /* The PNG or SVG button: the picked figure, at its size on the page (PNG at 2x). */
        saveFigure: function (png, svg, pick) {
            const trigger = dash_clientside.callback_context.triggered_id;
            if (!trigger) { return window.dash_clientside.no_update; }
            const graph = document.querySelector('#' + pick + ' .js-plotly-plot');
            if (!graph) { return 'no figure to save'; }
            const format = trigger.endsWith('svg') ? 'svg' : 'png';
            Plotly.downloadImage(graph, {format: format, filename: 'collsim-' + pick,
                width: graph._fullLayout.width, height: graph._fullLayout.height, scale: format === 'png' ? 2 : 1});
            return 'saved ' + format;
        },
    },
});

/* A server answer applies only to the page it was asked for: a page's callbacks (every server
   callback but the routing one) are asked for the page the container shows when they are sent
   (window.collsimPageShown), the routing callback for the instance it builds (routeGate's `at`). An
   answer whose page the container no longer shows is dropped before Dash applies it (an empty 204
   answer, as a callback that prevents its update): the pages of one path share their component
   ids, so a hardware preset's answer held up while a link to the same page was followed filled
   the new page's fields (ranks, latency, bandwidth, topology, with no hardware picked), and its
   URL writer added that mix to the history. A route answer the browser no longer asks for (a
   later route request was sent) is dropped too; one it asks for makes its page the shown one. A
   background run's polls belong to the page its first poll was sent for (by its cacheKey). */
(function () {
    if (!window.fetch) { return; }  // no fetch, no callbacks (node runs this file to test the writers)
    const send = window.fetch.bind(window);
    const jobs = {};
    window.fetch = function (resource, options) {
        const url = String((resource && resource.url) || resource);
        if (!url.includes('_dash-update-component') || !options || typeof options.body !== 'string') { return send(resource, options); }
        const asked = collsimAskedFor(url, options.body, jobs);
        return send(resource, options).then(answer => collsimAnswer(answer, asked));
    };
})();

/* Which page a callback request is asked for ({page, route}; see the fetch wrapper above). */
function collsimAskedFor(url, body, jobs) {
    const job = new URLSearchParams(url.split('?')[1] || '').get('cacheKey');
    if (job) {
        if (!(job in jobs)) { jobs[job] = window.collsimPageShown || 0; }
        return {page: jobs[job], route: false};
    }
    if (!body.includes('"route-request"')) { return {page: window.collsimPageShown || 0, route: false}; }
    const request = (JSON.parse(body).inputs || []).find(input => input.id === 'route-request');  // webapp.ids.ROUTE_REQUEST
    return request ? {page: (request.value || {}).at || 0, route: true} : {page: window.collsimPageShown || 0, route: false};
}

/* The server's answer, or an empty one when its page is gone (or, for a route, no longer asked for). */
function collsimAnswer(answer, asked) {
    if (answer.status !== 200) { return answer; }
    const current = asked.route ? (window.collsimPage || 0) : (window.collsimPageShown || 0);
    if (asked.page !== current) { return new Response(null, {status: 204}); }
    if (asked.route) { window.collsimPageShown = asked.page; }
    return answer;
}

function collsimView(spec, values, view) {
    const form = {};
    spec.names.forEach((name, i) => { form[name] = values[i]; });
    const [step, color, cmpField, cmpValue] = view;
    form.step = String(step || 0);
    form.color = color || 'step';
    form.cmp = cmpValue ? cmpField + ':' + cmpValue : '';
    return form;
}

function collsimShown(path) {
    const bare = text => (text || '').replace(/\/+$/, '') || '/';
    return bare(window.location.pathname) === bare(path);
}

function collsimText(value) {
    return (value === null || value === undefined || value === false || value === 0) ? '' : String(value);
}

/* The page's query from its form, twice, or nothing while the address bar shows another page or
   the browser has asked for another page (instance: the route request the writer's page was built
   for, none for the page a load's layout carries; window.collsimPage: the last one asked for,
   routeGate): a write still pending when a link left the page (the fields a server answer fills,
   a step or a colouring answered late) would put this page's query on the next page's address, one
   more history entry that Back leads to, or, landing with the link, the next page built from it;
   with a link to the same path, it replaced the link's own history entry. */
function collsimQuery(spec, form, instance) {
    const current = (instance || 0) === (window.collsimPage || 0);
    if (!current || !collsimShown(spec.path)) { return [window.dash_clientside.no_update, window.dash_clientside.no_update]; }
    const by = spec.pinned_by ? collsimText(form[spec.pinned_by]).trim() !== '' : false;
    const pinned = spec.pinned || [], cleared = spec.cleared || [];
    const query = new URLSearchParams();
    for (const [key, fallback] of Object.entries(spec.defaults)) {
        const text = (!by && cleared.includes(key)) ? '' : collsimText(form[key]);
        if (text !== fallback || (by && pinned.includes(key))) { query.append(key, text); }
    }
    const search = query.toString() ? '?' + query.toString() : '';
    collsimRewrite(search);
    return [search, search];
}

/* An address no writer wrote (a link's, Back's, the one the tab was opened on) is the one the page
   was just built from: the page's first write rewrites it (keys at their defaults dropped, what a
   preset filled added), so it replaces that history entry, and the URL component, finding the
   address already there, adds none. Pushed as a new entry, Back from it went to the link's own
   address, which built the page again, which pushed again: Back never left the page (the guided
   link /ddp?preset=gpt2&comm_model=ow, all defaults, became /ddp at each Back). A write after the
   page's own earlier one is a change of the form: a new entry, as before. */
function collsimRewrite(search) {
    const here = window.location.pathname + window.location.search;
    if (here !== window.collsimWritten && search !== window.location.search) {
        window.history.replaceState(window.history.state, '', window.location.pathname + search + window.location.hash);
    }
    window.collsimWritten = window.location.pathname + search;
}
