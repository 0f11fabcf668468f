import Foundation

struct DeviceRecord: Sendable {
    enum Status: Sendable {
        case pending
        case approved(username: String, at: Date)
        case denied
    }

    let clientID: String
    let userCode: String
    let scopes: [String]
    let expiresAt: Date
    var interval: Duration
    var lastPoll: Date?
    var status: Status = .pending
}
