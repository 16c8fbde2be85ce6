// SPDX-License-Identifier: Apache-2.0
// `import Serving` gives what serves varlink calls to typed handlers the API it is written in:
// the portable core, the varlink wire, and the runtime its services run on.
@_exported import BusCore
@_exported import Runtime
@_exported import Varlink
