"""REST API of the review workflow: a thin layer over ``review.services``.

Objects are reached through ``access_*`` (404 when the user may not read the task); who may
do what at which layer is decided by the services, which raise AccessDenied / DomainError.
"""

from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from hilbench_annotate.access import access_project, access_task
from hilbench_annotate.errors import DomainError
from hilbench_annotate.models import Project
from hilbench_annotate.params import MAX_ID
from review.models import ReviewLayer
from review.selectors import (
    notifications_for,
    pipeline_layers,
    policy_for,
    review_queue,
    task_comments,
    task_decisions,
)
from review.serializers import (
    AssignIn,
    AssignmentOut,
    CommentIn,
    CommentOut,
    DecisionIn,
    DecisionOut,
    NotificationOut,
    NotificationsReadIn,
    NotificationsReadOut,
    PipelineIn,
    PipelineOut,
    QueueLayerOut,
    ResolveIn,
    SubmitIn,
    TakeNextIn,
    TaskReviewStateOut,
    decision_arguments,
    pipeline_arguments,
)
from review.services import (
    comment_add,
    comment_set_resolved,
    notifications_mark_read,
    pipeline_update,
    review_assign,
    review_decide,
    review_release,
    review_take_next,
    review_withdraw,
    task_submit,
)

TAGS = ["review"]


# --- pipeline -----------------------------------------------------------------------------------


class PipelineApi(APIView):
    @extend_schema(tags=TAGS, responses=PipelineOut, summary="The project's review layers")
    def get(self, request, project_id: int):
        project = access_project(request.user, project_id)
        return Response(_pipeline_out(project))

    @extend_schema(
        tags=TAGS,
        request=PipelineIn,
        responses=PipelineOut,
        summary="Replace the project's review layers (leads)",
    )
    def put(self, request, project_id: int):
        data = _valid(PipelineIn, request.data)
        pipeline_update(actor=request.user, project_id=project_id, **pipeline_arguments(data))
        return Response(_pipeline_out(access_project(request.user, project_id)))


def _pipeline_out(project: Project) -> dict:
    policy = policy_for(project=project)
    return PipelineOut(
        {
            "project": project.pk,
            "layers": pipeline_layers(project=project),
            "lock_minutes": policy.lock_minutes,
            "reject_reasons": policy.reject_reasons,
        }
    ).data


def _layer_at(project: Project, position: int) -> ReviewLayer:
    for layer in pipeline_layers(project=project):
        if layer.position == position:
            return layer
    raise DomainError(f"The pipeline of {project.name} has no layer {position}.")


# --- submission, queue and assignment -----------------------------------------------------------


class TaskSubmitApi(APIView):
    @extend_schema(
        tags=TAGS,
        request=SubmitIn,
        responses=TaskReviewStateOut,
        summary="Submit (or resubmit) the task for review once its lint is clean",
    )
    def post(self, request, task_id: int):
        data = _valid(SubmitIn, request.data)
        task = task_submit(
            actor=request.user, task_id=task_id, expected_version=data["expected_version"]
        )
        return Response(TaskReviewStateOut(task).data)


class QueueFilterIn(serializers.Serializer):
    project = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    layer = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)


class ReviewQueueApi(APIView):
    @extend_schema(
        tags=TAGS,
        parameters=[
            OpenApiParameter("project", int, description="only this project"),
            OpenApiParameter("layer", int, description="only this layer position"),
        ],
        responses=QueueLayerOut(many=True),
        summary="Per layer you may act on: how many tasks you may take, and what you hold",
    )
    def get(self, request):
        filters = _valid(QueueFilterIn, request.query_params)
        queue = review_queue(
            user=request.user, project_id=filters.get("project"), position=filters.get("layer")
        )
        rows = [
            {
                "project": row.project.pk,
                "project_name": row.project.name,
                "layer": row.layer.position,
                "name": row.layer.name,
                "role": row.layer.role,
                "self_check": row.layer.self_check,
                "eligible": row.eligible,
                "assignments": row.assignments,
            }
            for row in queue
        ]
        return Response(QueueLayerOut(rows, many=True).data)


class TakeNextApi(APIView):
    @extend_schema(
        tags=TAGS,
        request=TakeNextIn,
        responses={200: AssignmentOut, 204: None},
        summary="Lock the oldest task you may take at a layer (204 when there is none)",
    )
    def post(self, request):
        data = _valid(TakeNextIn, request.data)
        project = access_project(request.user, data["project"])
        layer = _layer_at(project, data["layer"])
        # Not wrapped in a transaction: the service locks and retries one short one at a time.
        assignment = review_take_next(user=request.user, layer=layer)
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(AssignmentOut(assignment).data)


class TaskAssignApi(APIView):
    @extend_schema(
        tags=TAGS,
        request=AssignIn,
        responses={201: AssignmentOut},
        summary="Assign the task's current layer to a project member (leads)",
    )
    def post(self, request, task_id: int):
        data = _valid(AssignIn, request.data)
        assignment = review_assign(actor=request.user, task_id=task_id, reviewer=data["reviewer"])
        return Response(AssignmentOut(assignment).data, status=status.HTTP_201_CREATED)


class AssignmentReleaseApi(APIView):
    @extend_schema(
        tags=TAGS,
        request=None,
        responses=AssignmentOut,
        summary="Give the task back to the queue (its reviewer, or a lead)",
    )
    def post(self, request, assignment_id: int):
        assignment = review_release(actor=request.user, assignment_id=assignment_id)
        return Response(AssignmentOut(assignment).data)


# --- decisions ----------------------------------------------------------------------------------


class TaskDecisionsApi(APIView):
    @extend_schema(
        tags=TAGS,
        responses=DecisionOut(many=True),
        summary="Decisions on the task, newest first (a withdrawn one has its withdrawn_at)",
    )
    def get(self, request, task_id: int):
        task = access_task(request.user, task_id)
        return Response(DecisionOut(task_decisions(task=task), many=True).data)

    @extend_schema(
        tags=TAGS,
        request=DecisionIn,
        responses={201: DecisionOut},
        summary="Approve, request changes or reject at the task's current layer",
    )
    def post(self, request, task_id: int):
        data = _valid(DecisionIn, request.data)
        decision = review_decide(actor=request.user, task_id=task_id, **decision_arguments(data))
        return Response(DecisionOut(decision).data, status=status.HTTP_201_CREATED)


class DecisionWithdrawApi(APIView):
    @extend_schema(
        tags=TAGS,
        request=None,
        responses=DecisionOut,
        summary="Withdraw your own decision made by mistake, while nothing depends on it",
    )
    def post(self, request, decision_id: int):
        decision = review_withdraw(actor=request.user, decision_id=decision_id)
        return Response(DecisionOut(decision).data)


# --- threads and notifications -------------------------------------------------------------------


class TaskCommentsApi(APIView):
    @extend_schema(tags=TAGS, responses=CommentOut(many=True), summary="Threads on the task")
    def get(self, request, task_id: int):
        task = access_task(request.user, task_id)
        return Response(CommentOut(task_comments(task=task), many=True).data)

    @extend_schema(
        tags=TAGS,
        request=CommentIn,
        responses={201: CommentOut},
        summary="Comment on the task or one of its blockers, or reply in a thread",
    )
    def post(self, request, task_id: int):
        data = _valid(CommentIn, request.data)
        comment = comment_add(
            actor=request.user,
            task_id=task_id,
            body=data["body"],
            blocker_key=data["blocker_key"],
            parent_id=data["parent"],
        )
        return Response(CommentOut(comment).data, status=status.HTTP_201_CREATED)


class CommentResolveApi(APIView):
    @extend_schema(
        tags=TAGS,
        request=ResolveIn,
        responses=CommentOut,
        summary="Resolve or reopen the thread the comment belongs to",
    )
    def post(self, request, comment_id: int):
        data = _valid(ResolveIn, request.data)
        root = comment_set_resolved(
            actor=request.user, comment_id=comment_id, resolved=data["resolved"]
        )
        return Response(CommentOut(root).data)


class NotificationFilterIn(serializers.Serializer):
    unread = serializers.BooleanField(required=False)


@extend_schema(
    tags=TAGS,
    parameters=[OpenApiParameter("unread", bool, description="only unread ones (unread=1)")],
    summary="Your notifications, newest first",
)
class NotificationListApi(generics.ListAPIView):
    serializer_class = NotificationOut

    def get_queryset(self):
        filters = _valid(NotificationFilterIn, self.request.query_params)
        return notifications_for(user=self.request.user, unread=bool(filters.get("unread")))


class NotificationsReadApi(APIView):
    @extend_schema(
        tags=TAGS,
        request=NotificationsReadIn,
        responses=NotificationsReadOut,
        summary="Mark your notifications read (the ids given, or all)",
    )
    def post(self, request):
        data = _valid(NotificationsReadIn, request.data)
        marked = notifications_mark_read(user=request.user, ids=data["ids"])
        return Response(NotificationsReadOut({"marked": marked}).data)


# --- helpers ------------------------------------------------------------------------------------


def _valid(serializer_class, data) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


urlpatterns = [
    path("projects/<int:project_id>/pipeline/", PipelineApi.as_view(), name="api-pipeline"),
    path("tasks/<int:task_id>/submit", TaskSubmitApi.as_view(), name="api-task-submit"),
    path("review/queue", ReviewQueueApi.as_view(), name="api-review-queue"),
    path("review/take-next", TakeNextApi.as_view(), name="api-review-take-next"),
    path("tasks/<int:task_id>/assign", TaskAssignApi.as_view(), name="api-task-assign"),
    path(
        "assignments/<int:assignment_id>/release",
        AssignmentReleaseApi.as_view(),
        name="api-assignment-release",
    ),
    path("tasks/<int:task_id>/decisions", TaskDecisionsApi.as_view(), name="api-task-decisions"),
    path(
        "decisions/<int:decision_id>/withdraw",
        DecisionWithdrawApi.as_view(),
        name="api-decision-withdraw",
    ),
    path("tasks/<int:task_id>/comments", TaskCommentsApi.as_view(), name="api-task-comments"),
    path(
        "comments/<int:comment_id>/resolve", CommentResolveApi.as_view(), name="api-comment-resolve"
    ),
    path("notifications", NotificationListApi.as_view(), name="api-notification-list"),
    path("notifications/read", NotificationsReadApi.as_view(), name="api-notifications-read"),
]
